#include "sample_file.h"

#include <charconv>
#include <fstream>
#include <optional>
#include <stdexcept>

namespace leakwrap {
namespace {

using nlohmann::json;

class SyntaxError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The bytes of a stream, a block at a time, with one byte of look-ahead.
class ByteReader {
public:
    explicit ByteReader(std::istream& in) : in_(in) {}

    int peek() {
        if (at_ == end_ && !fill()) return -1;
        return static_cast<unsigned char>(buffer_[at_]);
    }
    int get() {
        const int c = peek();
        if (c >= 0) ++at_;
        return c;
    }
    int next_token() {  // the next byte that is not whitespace, not taken
        for (int c = peek();; c = peek()) {
            if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return c;
            ++at_;
        }
    }
    void expect(char wanted) {
        if (next_token() != wanted) throw SyntaxError(std::string("expected '") + wanted + "'");
        ++at_;
    }

    // Appends the text of the value that starts here to `out` (nullptr: skips it), unchanged.
    void value(std::string* out) {
        const int first = next_token();
        if (first == '"') return string(out);
        if (first == '{' || first == '[') return nested(out);
        if (first < 0) throw SyntaxError("unexpected end of the file");
        // A number, true, false or null: up to the next delimiter.
        for (int c = peek();
             c >= 0 && c != ',' && c != '}' && c != ']' && c != ' ' && c != '\n' && c != '\r' && c != '\t'; c = peek())
            append(out, static_cast<char>(get()));
    }

private:
    bool fill() {
        in_.read(buffer_, sizeof(buffer_));
        at_ = 0;
        end_ = static_cast<std::size_t>(in_.gcount());
        return end_ > 0;
    }
    static void append(std::string* out, char c) {
        if (out != nullptr) out->push_back(c);
    }
    void string(std::string* out) {
        append(out, static_cast<char>(get()));  // the opening quote
        for (;;) {
            const int c = get();
            if (c < 0) throw SyntaxError("unterminated string");
            append(out, static_cast<char>(c));
            if (c == '"') return;
            if (c == '\\') {
                const int escaped = get();
                if (escaped < 0) throw SyntaxError("unterminated string");
                append(out, static_cast<char>(escaped));
            }
        }
    }
    void nested(std::string* out) {
        int depth = 0;
        do {
            const int c = peek();
            if (c < 0) throw SyntaxError("unexpected end of the file");
            if (c == '"') {
                string(out);
                continue;
            }
            append(out, static_cast<char>(get()));
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
        } while (depth > 0);
    }

    std::istream& in_;
    char buffer_[1 << 16];
    std::size_t at_ = 0;
    std::size_t end_ = 0;
};

// A flat JSON object's members, read from its text: strings (unescaped), unsigned integers, true,
// false and null. Anything else (a nested value, a fraction) makes it not flat: nullopt.
class FlatObject {
public:
    explicit FlatObject(std::string_view text) : text_(text) {}

    // Calls `member(key, value_text, is_string)` for each member; false if the object is not flat.
    template <class Member>
    bool read(Member&& member) {
        skip_space();
        if (!take('{')) return false;
        skip_space();
        if (take('}')) return at_end();
        for (;;) {
            std::string key;
            if (!string(key)) return false;
            skip_space();
            if (!take(':')) return false;
            skip_space();
            if (peek() == '"') {
                value_.clear();
                if (!string(value_)) return false;
                member(key, std::string_view(value_), true);
            } else {
                const std::size_t start = at_;
                while (at_ < text_.size() && is_scalar_byte(text_[at_])) ++at_;
                if (at_ == start) return false;
                member(key, text_.substr(start, at_ - start), false);
            }
            skip_space();
            if (take('}')) return at_end();
            if (!take(',')) return false;
            skip_space();
        }
    }

private:
    static bool is_scalar_byte(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z'); }
    int peek() const { return at_ < text_.size() ? static_cast<unsigned char>(text_[at_]) : -1; }
    bool take(char c) {
        if (peek() != c) return false;
        ++at_;
        return true;
    }
    void skip_space() {
        while (at_ < text_.size() &&
               (text_[at_] == ' ' || text_[at_] == '\n' || text_[at_] == '\r' || text_[at_] == '\t'))
            ++at_;
    }
    bool at_end() {
        skip_space();
        return at_ == text_.size();
    }
    // A string without escapes is copied as it is; one with escapes goes through nlohmann, which
    // knows every one of them (and \u surrogate pairs).
    bool string(std::string& out) {
        if (!take('"')) return false;
        const std::size_t start = at_;
        bool escaped = false;
        for (; at_ < text_.size() && text_[at_] != '"'; ++at_) {
            if (static_cast<unsigned char>(text_[at_]) < 0x20) return false;
            if (text_[at_] == '\\') {
                escaped = true;
                if (++at_ == text_.size()) return false;
            }
        }
        if (at_ == text_.size()) return false;
        const std::string_view body = text_.substr(start, at_ - start);
        ++at_;
        if (!escaped) {
            out.assign(body);
            return true;
        }
        const json decoded = json::parse(text_.substr(start - 1, body.size() + 2), nullptr, false);
        if (!decoded.is_string()) return false;
        out = decoded.get<std::string>();
        return true;
    }

    std::string_view text_;
    std::size_t at_ = 0;
    std::string value_;
};

std::optional<uint64_t> unsigned_number(std::string_view text) {
    uint64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

// A series line's site; nullopt if the text is anything else (then nlohmann reads it).
std::optional<SampleSite> flat_sample_site(std::string_view text, bool& has_stack) {
    SampleSite site;
    bool has_id = false, has_label = false, numbers = true;
    has_stack = false;
    const bool flat = FlatObject(text).read([&](const std::string& key, std::string_view value, bool is_string) {
        const auto number = [&](uint64_t& field) {
            const auto parsed = is_string ? std::nullopt : unsigned_number(value);
            if (parsed) field = *parsed;
            numbers = numbers && parsed.has_value();
        };
        if (key == "id") {
            number(site.id);
            has_id = true;
        } else if (key == "live_bytes") {
            number(site.counters.live_bytes);
        } else if (key == "live_blocks") {
            number(site.counters.live_blocks);
        } else if (key == "allocs") {
            number(site.counters.allocs);
        } else if (key == "frees") {
            number(site.counters.frees);
        } else if (key == "label" && is_string) {
            site.label.assign(value);
            has_label = true;
        } else if (key == "stack" && is_string) {
            site.stack_key.assign(value);
            has_stack = true;
        } else if (key == "label" || key == "stack") {
            numbers = false;  // not a string: let nlohmann say what is wrong
        }
    });
    if (!flat || !numbers || !has_id || !has_label) return std::nullopt;
    if (!has_stack) site.stack_key = site.label;
    return site;
}

}  // namespace

SampleSite sample_site_from_text(std::string_view text, bool& has_stack) {
    if (auto site = flat_sample_site(text, has_stack)) return std::move(*site);
    return sample_site_from_json(json::parse(text), has_stack);
}

void visit_sample_stream(std::istream& in, const std::string& name, const std::function<void(const json& head)>& head,
                         const std::function<void(SampleSite&& site, bool has_stack)>& site) {
    const auto not_a_snapshot = [&](const std::string& why) {
        return std::runtime_error(name + ": not one JSON report or series line: " + why);
    };
    ByteReader reader(in);
    std::string head_text = "{";
    bool has_sites = false;
    try {
        reader.expect('{');
        std::string text;
        for (bool first = true; reader.next_token() != '}'; first = false) {
            if (!first) reader.expect(',');
            text.clear();
            reader.value(&text);
            const json key = json::parse(text);
            if (!key.is_string()) throw SyntaxError("a member's name is not a string");
            reader.expect(':');
            if (key == "labels") {
                reader.value(nullptr);
            } else if (key == "sites") {
                has_sites = true;
                reader.expect('[');
                for (bool first_site = true; reader.next_token() != ']'; first_site = false) {
                    if (!first_site) reader.expect(',');
                    text.clear();
                    reader.value(&text);
                    bool has_stack = false;
                    SampleSite parsed = sample_site_from_text(text, has_stack);
                    site(std::move(parsed), has_stack);
                }
                reader.expect(']');
            } else {
                if (head_text.size() > 1) head_text += ',';
                head_text += key.dump() + ':';
                reader.value(&head_text);
            }
        }
        reader.expect('}');
        if (reader.next_token() >= 0) throw SyntaxError("more after the object");
    } catch (const json::exception& error) {
        throw not_a_snapshot(error.what());
    } catch (const SyntaxError& error) {
        throw not_a_snapshot(error.what());
    }
    head_text += head_text.size() > 1 ? ",\"sites\":[]}" : "\"sites\":[]}";
    const json object = json::parse(head_text, nullptr, false);
    if (!has_sites || object.is_discarded() || !object.contains("totals"))
        throw not_a_snapshot("it has no \"sites\" or no \"totals\"");
    try {
        head(object);
    } catch (const json::exception& error) {
        throw not_a_snapshot(error.what());
    }
}

void visit_sample_file(const std::filesystem::path& path, const std::function<void(const json& head)>& head,
                       const std::function<void(SampleSite&& site, bool has_stack)>& site) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw std::runtime_error("cannot open " + path.string());
    visit_sample_stream(in, path.string(), head, site);
}

}  // namespace leakwrap
