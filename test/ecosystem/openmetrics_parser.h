// A strict reader of the OpenMetrics text format and of Prometheus' own, for the tests: it accepts only what the
// specification allows (of what a gauge and counter exposition can contain) and names the first
// line that breaks a rule.
#pragma once

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace leakwrap::ecosystem {

struct MetricFamily {
    std::string type;
    std::string unit;
    std::string help;
};

struct MetricSample {
    std::string name;  // as exposed: a counter's ends in _total
    std::map<std::string, std::string> labels;
    double value = 0;
};

struct Exposition {
    std::map<std::string, MetricFamily> families;
    std::vector<MetricSample> samples;  // in order
};

class OpenMetricsError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Rules: lines ending in \n, the last one "# EOF"; a family's TYPE before its other
// metadata and samples, at most one of each metadata line, a UNIT that is the suffix of the
// family name; samples only of the family declared last (families never interleave), named as
// their type requires; label names and escapes as specified, no label twice; no series twice;
// counters not negative.
Exposition parse_openmetrics(const std::string& text);

// The Prometheus text format (0.0.4) by the same rules where it has them: HELP and TYPE (no UNIT)
// in either order before the family's samples, every sample named as its family (a counter's
// family name ends in _total), no "# EOF".
Exposition parse_prometheus_text(const std::string& text);

}  // namespace leakwrap::ecosystem
