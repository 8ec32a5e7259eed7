#include "openmetrics_parser.h"

#include <cmath>
#include <regex>
#include <set>
#include <sstream>

namespace leakwrap::ecosystem {
namespace {

const std::regex kMetricName("[a-zA-Z_:][a-zA-Z0-9_:]*");
const std::regex kLabelName("[a-zA-Z_][a-zA-Z0-9_]*");
const std::set<std::string> kTypes = {"counter",  "gauge", "histogram", "gaugehistogram",
                                      "stateset", "info",  "summary",   "unknown"};

[[noreturn]] void fail(std::size_t line_number, const std::string& line, const std::string& why) {
    throw OpenMetricsError("line " + std::to_string(line_number) + " \"" + line + "\": " + why);
}

// The text of a quoted value with its escapes resolved; `at` moves past the closing quote.
std::string quoted(const std::string& text, std::size_t& at, std::size_t number, const std::string& line) {
    if (at >= text.size() || text[at] != '"') fail(number, line, "expected '\"'");
    std::string value;
    for (++at; at < text.size() && text[at] != '"'; ++at) {
        if (text[at] == '\n') fail(number, line, "raw line break in a label value");
        if (text[at] != '\\') {
            value += text[at];
            continue;
        }
        if (++at == text.size()) break;
        switch (text[at]) {
            case '\\': value += '\\'; break;
            case '"': value += '"'; break;
            case 'n': value += '\n'; break;
            default: fail(number, line, std::string("invalid escape \\") + text[at]);
        }
    }
    if (at >= text.size()) fail(number, line, "unterminated label value");
    ++at;
    return value;
}

double number_value(const std::string& text, std::size_t number, const std::string& line) {
    static const std::regex kNumber(R"([+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?Inf|NaN)");
    if (!std::regex_match(text, kNumber)) fail(number, line, "invalid value \"" + text + "\"");
    if (text.ends_with("Inf")) return text[0] == '-' ? -INFINITY : INFINITY;
    return text == "NaN" ? NAN : std::stod(text);
}

// The sample name a family of this type may expose. Prometheus text names a family as its samples.
bool sample_name_fits(const std::string& sample, const std::string& family, const std::string& type, bool openmetrics) {
    if (!openmetrics) return sample == family;
    if (type == "counter") return sample == family + "_total" || sample == family + "_created";
    if (type == "info") return sample == family + "_info";
    if (type == "gauge" || type == "unknown") return sample == family;
    return sample.starts_with(family);
}

Exposition parse_exposition(const std::string& text, bool openmetrics) {
    if (openmetrics && !text.ends_with("# EOF\n")) throw OpenMetricsError("does not end with \"# EOF\\n\"");
    if (!openmetrics && !text.ends_with("\n")) throw OpenMetricsError("does not end with a line break");
    Exposition exposition;
    std::string family;  // declared last
    std::set<std::string> families_with_samples, metadata_seen, series;
    std::istringstream in(openmetrics ? text.substr(0, text.size() - 6) : text);
    std::size_t number = 0;
    for (std::string line; std::getline(in, line);) {
        ++number;
        if (line.starts_with("#")) {
            std::istringstream words(line);
            std::string hash, kind, name;
            words >> hash >> kind >> name;
            std::string rest;
            std::getline(words, rest);
            if (!rest.empty() && rest[0] == ' ') rest.erase(0, 1);
            if (hash != "#" || (kind != "TYPE" && kind != "HELP" && (kind != "UNIT" || !openmetrics)))
                fail(number, line,
                     openmetrics ? "only TYPE, UNIT and HELP lines may start with #"
                                 : "only HELP and TYPE lines may start with #");
            if (!std::regex_match(name, kMetricName)) fail(number, line, "invalid metric name");
            // OpenMetrics opens a family with its TYPE line; Prometheus text with either line.
            if (openmetrics ? kind == "TYPE" : name != family) {
                if (exposition.families.contains(name)) fail(number, line, "family declared twice");
                exposition.families[name];
                family = name;
            }
            if (name != family) fail(number, line, kind + " of a family other than the one declared last");
            if (families_with_samples.contains(name)) fail(number, line, "metadata after samples");
            if (!metadata_seen.insert(kind + " " + name).second) fail(number, line, kind + " twice");
            if (kind == "TYPE") {
                if (!kTypes.contains(rest)) fail(number, line, "unknown type");
                exposition.families[name].type = rest;
            } else if (kind == "UNIT") {
                if (!name.ends_with("_" + rest)) fail(number, line, "the family name must end with _<unit>");
                exposition.families[name].unit = rest;
            } else {
                std::size_t at = 0;
                for (; (at = rest.find('\\', at)) != std::string::npos; at += 2)
                    if (at + 1 >= rest.size() ||
                        std::string(openmetrics ? "\\n\"" : "\\n").find(rest[at + 1]) == std::string::npos)
                        fail(number, line, "invalid escape in HELP");
                exposition.families[name].help = rest;
            }
            continue;
        }

        MetricSample sample;
        std::size_t at = 0;
        while (at < line.size() && line[at] != '{' && line[at] != ' ') ++at;
        sample.name = line.substr(0, at);
        if (!std::regex_match(sample.name, kMetricName)) fail(number, line, "invalid metric name");
        if (family.empty() || !sample_name_fits(sample.name, family, exposition.families[family].type, openmetrics))
            fail(number, line, "sample outside the family declared last (" + family + ")");
        if (at < line.size() && line[at] == '{') {
            ++at;
            while (at < line.size() && line[at] != '}') {
                const std::size_t equals = line.find('=', at);
                if (equals == std::string::npos) fail(number, line, "label without '='");
                const std::string label = line.substr(at, equals - at);
                if (!std::regex_match(label, kLabelName)) fail(number, line, "invalid label name \"" + label + "\"");
                at = equals + 1;
                if (!sample.labels.emplace(label, quoted(line, at, number, line)).second)
                    fail(number, line, "label " + label + " twice");
                if (at < line.size() && line[at] == ',') ++at;
            }
            if (at >= line.size()) fail(number, line, "unterminated label set");
            ++at;
        }
        if (at >= line.size() || line[at] != ' ') fail(number, line, "expected one space before the value");
        const std::string value = line.substr(at + 1);
        sample.value = number_value(value.substr(0, value.find(' ')), number, line);
        if (exposition.families[family].type == "counter" && !(sample.value >= 0))
            fail(number, line, "negative counter");
        std::string key = sample.name;
        for (const auto& [label, label_value] : sample.labels) key += "\x1f" + label + "=" + label_value;
        if (!series.insert(key).second) fail(number, line, "series exposed twice");
        families_with_samples.insert(family);
        exposition.samples.push_back(std::move(sample));
    }
    return exposition;
}

}  // namespace

Exposition parse_openmetrics(const std::string& text) { return parse_exposition(text, true); }

Exposition parse_prometheus_text(const std::string& text) { return parse_exposition(text, false); }

}  // namespace leakwrap::ecosystem
