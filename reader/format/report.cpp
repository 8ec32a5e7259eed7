#include "report.h"

#include "report_csv.h"
#include "report_folded.h"
#include "report_json.h"
#include "report_openmetrics.h"
#include "report_pprof.h"
#include "report_text.h"

namespace leakwrap {

void write_report(std::ostream& out, const ReportInput& input) {
    switch (input.options.format) {
        case ReportFormat::text: return write_text_report(out, input);
        case ReportFormat::json: return write_json_report(out, input);
        case ReportFormat::csv: return write_csv_report(out, input);
        case ReportFormat::folded: return write_folded_report(out, input);
        case ReportFormat::prometheus: return write_metrics(out, {input}, MetricsDialect::prometheus);
        case ReportFormat::openmetrics: return write_metrics(out, {input}, MetricsDialect::openmetrics);
        case ReportFormat::pprof: return write_pprof_report(out, input);
    }
}

}  // namespace leakwrap
