#include "eh_frame.h"

#include "frame_sizes.h"

namespace leakwrap {
namespace {

// DWARF register numbers of x86_64 (System V psABI): rbp, rsp, and the return address column.
constexpr uint64_t kRbp = 6;
constexpr uint64_t kRsp = 7;
constexpr uint64_t kReturnAddress = 16;

// DW_EH_PE_* pointer encodings: the low nibble says how the value is stored, bits 4-6 what it
// is relative to.
constexpr uint8_t kPcRelative = 0x10;

// Reads a record front to back through a small window of the source, so that a record of any
// length costs a few hundred bytes of the allocating thread's stack, and never past `end`.
class CfiReader {
public:
    CfiReader(const CfiSource& source, uint64_t address, uint64_t end)
        : source_(source), address_(address), end_(end) {}

    uint64_t address() const { return address_; }
    uint64_t end() const { return end_; }
    bool at_end() const { return address_ >= end_; }
    void set_end(uint64_t end) { end_ = end; }

    bool byte(uint8_t* value) {
        if (address_ >= end_) return false;
        if (address_ < window_start_ || address_ - window_start_ >= window_size_) {
            const uint64_t left = end_ - address_;
            window_size_ =
                source_.read(source_.context, address_, window_, left < sizeof window_ ? left : sizeof window_);
            window_start_ = address_;
            if (window_size_ == 0) return false;
        }
        *value = window_[address_++ - window_start_];
        return true;
    }

    // A little-endian unsigned value of `bytes` bytes (at most 8).
    bool fixed(unsigned bytes, uint64_t* value) {
        *value = 0;
        for (unsigned i = 0; i < bytes; ++i) {
            uint8_t next;
            if (!byte(&next)) return false;
            *value |= uint64_t{next} << (8 * i);
        }
        return true;
    }

    bool uleb(uint64_t* value) {
        *value = 0;
        for (unsigned shift = 0;; shift += 7) {
            uint8_t next;
            if (!byte(&next) || shift > 63) return false;
            *value |= uint64_t{next & 0x7fu} << shift;
            if ((next & 0x80) == 0) return true;
        }
    }

    bool sleb(int64_t* value) {
        uint64_t bits = 0;
        for (unsigned shift = 0;; shift += 7) {
            uint8_t next;
            if (!byte(&next) || shift > 63) return false;
            bits |= uint64_t{next & 0x7fu} << shift;
            if ((next & 0x80) == 0) {
                if (shift + 7 < 64 && (next & 0x40) != 0) bits |= ~uint64_t{0} << (shift + 7);
                *value = static_cast<int64_t>(bits);
                return true;
            }
        }
    }

    bool skip(uint64_t bytes) {
        if (bytes > end_ - address_) return false;
        address_ += bytes;
        return true;
    }

    // A pointer stored with a DW_EH_PE encoding: absolute or relative to its own address; the
    // other bases (text, data, function) and indirect pointers are not used in x86_64 FDEs.
    bool pointer(uint8_t encoding, uint64_t* value) {
        const uint64_t field = address_;
        uint64_t raw = 0;
        int64_t signed_raw = 0;
        bool ok;
        switch (encoding & 0x0f) {
            case 0x00: ok = fixed(8, &raw); break;  // absptr
            case 0x01: ok = uleb(&raw); break;
            case 0x02: ok = fixed(2, &raw); break;
            case 0x03: ok = fixed(4, &raw); break;
            case 0x04: ok = fixed(8, &raw); break;
            case 0x09:
                ok = sleb(&signed_raw);
                raw = static_cast<uint64_t>(signed_raw);
                break;
            case 0x0a:
                ok = fixed(2, &raw);
                raw = static_cast<uint64_t>(int64_t{static_cast<int16_t>(raw)});
                break;
            case 0x0b:
                ok = fixed(4, &raw);
                raw = static_cast<uint64_t>(int64_t{static_cast<int32_t>(raw)});
                break;
            case 0x0c: ok = fixed(8, &raw); break;
            default: return false;
        }
        if (!ok) return false;
        switch (encoding & 0xf0) {
            case 0x00: *value = raw; return true;
            case kPcRelative: *value = field + raw; return true;
            default: return false;
        }
    }

private:
    const CfiSource& source_;
    uint64_t address_;
    uint64_t end_;
    uint64_t window_start_ = 0;
    std::size_t window_size_ = 0;
    uint8_t window_[128];
};

// A record's length field: where its contents start (the reader's address after it) and end.
// 64-bit DWARF records (length 0xffffffff, then 8 bytes) are read too; a zero length ends
// .eh_frame and is no record.
bool read_record_length(CfiReader& reader, bool* is_64_bit) {
    uint64_t length;
    if (!reader.fixed(4, &length)) return false;
    *is_64_bit = length == 0xffffffffu;
    if (*is_64_bit && !reader.fixed(8, &length)) return false;
    if (length == 0 || length > reader.end() - reader.address()) return false;
    reader.set_end(reader.address() + length);
    return true;
}

// What is known of the two registers a walk needs besides rsp.
enum class Rule : uint8_t {
    kSameValue,  // the caller's value is this frame's (the default for callee-saved rbp)
    kUndefined,
    kAtCfa,  // saved at CFA + offset
    kOther,  // in another register, or computed: not followed
};

struct RegisterRule {
    Rule rule = Rule::kSameValue;
    int64_t offset = 0;
};

struct FrameRules {
    uint64_t cfa_register = kRsp;
    int64_t cfa_offset = 8;
    bool cfa_by_expression = false;
    RegisterRule rbp;
    RegisterRule return_address{Rule::kOther, 0};  // until the CIE says where it is
};

struct Cie {
    uint64_t code_alignment = 1;
    int64_t data_alignment = 1;
    uint8_t fde_encoding = 0;  // absptr unless an 'R' augmentation says otherwise
    bool has_augmentation_data = false;
    bool signal_frame = false;
};

// Bytes an encoded pointer takes (for the personality routine, which is skipped).
bool skip_pointer(CfiReader& reader, uint8_t encoding) {
    uint64_t ignored;
    return reader.pointer(encoding & 0x0f, &ignored);
}

// Reads a CIE's fields and leaves the reader at its initial instructions.
bool read_cie(CfiReader& reader, Cie* cie) {
    bool is_64_bit;
    if (!read_record_length(reader, &is_64_bit)) return false;
    uint64_t id, version;
    if (!reader.fixed(is_64_bit ? 8 : 4, &id) || id != 0 || !reader.fixed(1, &version)) return false;
    if (version != 1 && version != 3) return false;
    char augmentation[8];
    unsigned length = 0;
    for (uint8_t c;;) {
        if (!reader.byte(&c)) return false;
        if (c == 0) break;
        if (length == sizeof augmentation) return false;
        augmentation[length++] = static_cast<char>(c);
    }
    uint64_t return_register;
    if (!reader.uleb(&cie->code_alignment) || !reader.sleb(&cie->data_alignment)) return false;
    if (!(version == 1 ? reader.fixed(1, &return_register) : reader.uleb(&return_register))) return false;
    if (return_register != kReturnAddress) return false;
    if (length > 0 && augmentation[0] == 'z') {
        cie->has_augmentation_data = true;
        uint64_t data_length;
        if (!reader.uleb(&data_length)) return false;
        const uint64_t data_end = reader.address() + data_length;
        for (unsigned i = 1; i < length; ++i) {
            uint64_t encoding;
            switch (augmentation[i]) {
                case 'R':
                    if (!reader.fixed(1, &encoding)) return false;
                    cie->fde_encoding = static_cast<uint8_t>(encoding);
                    break;
                case 'P':
                    if (!reader.fixed(1, &encoding) || !skip_pointer(reader, static_cast<uint8_t>(encoding)))
                        return false;
                    break;
                case 'L':
                    if (!reader.fixed(1, &encoding)) return false;
                    break;
                case 'S': cie->signal_frame = true; break;
                case 'B': break;
                default: return false;  // unknown: what follows it cannot be found
            }
        }
        if (data_end < reader.address() || !reader.skip(data_end - reader.address())) return false;
    } else if (length > 0) {
        return false;  // an augmentation without 'z' ("eh", GCC 2): its data cannot be skipped
    }
    return true;
}

// Runs CFA instructions from the reader's address to its end, or until the location passes pc.
// `initial` is what DW_CFA_restore goes back to (the CIE's rules), null while running the CIE's.
class CfaProgram {
public:
    CfaProgram(const Cie& cie, FrameRules* rules, const FrameRules* initial, uint64_t location)
        : cie_(cie), rules_(*rules), initial_(initial), location_(location) {}

    bool run(CfiReader& reader, uint64_t pc) {
        while (!reader.at_end()) {
            uint8_t op;
            if (!reader.byte(&op)) return false;
            uint64_t reg = op & 0x3f, value = 0, delta = 0;
            int64_t signed_value = 0;
            bool advance = false;
            switch (op & 0xc0) {
                case 0x40:
                    delta = op & 0x3f;
                    advance = true;
                    break;  // DW_CFA_advance_loc
                case 0x80:  // DW_CFA_offset
                    if (!reader.uleb(&value)) return false;
                    save_at_cfa(reg, static_cast<int64_t>(value) * cie_.data_alignment);
                    break;
                case 0xc0: restore(reg); break;  // DW_CFA_restore
                default:
                    switch (op) {
                        case 0x00: break;  // nop
                        case 0x01: {       // set_loc
                            uint64_t location;
                            if (!reader.pointer(cie_.fde_encoding, &location)) return false;
                            if (location > pc) return true;
                            location_ = location;
                            break;
                        }
                        case 0x02:
                            advance = reader.fixed(1, &delta);
                            if (!advance) return false;
                            break;
                        case 0x03:
                            advance = reader.fixed(2, &delta);
                            if (!advance) return false;
                            break;
                        case 0x04:
                            advance = reader.fixed(4, &delta);
                            if (!advance) return false;
                            break;
                        case 0x05:  // offset_extended
                            if (!reader.uleb(&reg) || !reader.uleb(&value)) return false;
                            save_at_cfa(reg, static_cast<int64_t>(value) * cie_.data_alignment);
                            break;
                        case 0x06:  // restore_extended
                            if (!reader.uleb(&reg)) return false;
                            restore(reg);
                            break;
                        case 0x07:  // undefined
                            if (!reader.uleb(&reg)) return false;
                            set(reg, {Rule::kUndefined, 0});
                            break;
                        case 0x08:  // same_value
                            if (!reader.uleb(&reg)) return false;
                            set(reg, {Rule::kSameValue, 0});
                            break;
                        case 0x09:  // register
                        case 0x14:  // val_offset
                            if (!reader.uleb(&reg) || !reader.uleb(&value)) return false;
                            set(reg, {Rule::kOther, 0});
                            break;
                        case 0x0a:  // remember_state
                            if (remembered_ == kMaxRemembered) return false;
                            stack_[remembered_++] = rules_;
                            break;
                        case 0x0b:  // restore_state
                            if (remembered_ == 0) return false;
                            rules_ = stack_[--remembered_];
                            break;
                        case 0x0c:  // def_cfa
                            if (!reader.uleb(&reg) || !reader.uleb(&value)) return false;
                            define_cfa(reg, static_cast<int64_t>(value));
                            break;
                        case 0x0d:  // def_cfa_register
                            if (!reader.uleb(&reg)) return false;
                            define_cfa(reg, rules_.cfa_offset);
                            break;
                        case 0x0e:  // def_cfa_offset
                            if (!reader.uleb(&value)) return false;
                            rules_.cfa_offset = static_cast<int64_t>(value);
                            break;
                        case 0x0f:  // def_cfa_expression
                            if (!reader.uleb(&value) || !reader.skip(value)) return false;
                            rules_.cfa_by_expression = true;
                            break;
                        case 0x10:  // expression
                        case 0x16:  // val_expression
                            if (!reader.uleb(&reg) || !reader.uleb(&value) || !reader.skip(value)) return false;
                            set(reg, {Rule::kOther, 0});
                            break;
                        case 0x11:  // offset_extended_sf
                            if (!reader.uleb(&reg) || !reader.sleb(&signed_value)) return false;
                            save_at_cfa(reg, signed_value * cie_.data_alignment);
                            break;
                        case 0x12:  // def_cfa_sf
                            if (!reader.uleb(&reg) || !reader.sleb(&signed_value)) return false;
                            define_cfa(reg, signed_value * cie_.data_alignment);
                            break;
                        case 0x13:  // def_cfa_offset_sf
                            if (!reader.sleb(&signed_value)) return false;
                            rules_.cfa_offset = signed_value * cie_.data_alignment;
                            break;
                        case 0x15:  // val_offset_sf
                            if (!reader.uleb(&reg) || !reader.sleb(&signed_value)) return false;
                            set(reg, {Rule::kOther, 0});
                            break;
                        case 0x2e:  // GNU_args_size: what a landing pad pops, nothing a walk needs
                            if (!reader.uleb(&value)) return false;
                            break;
                        case 0x2f:  // GNU_negative_offset_extended
                            if (!reader.uleb(&reg) || !reader.uleb(&value)) return false;
                            save_at_cfa(reg, -static_cast<int64_t>(value) * cie_.data_alignment);
                            break;
                        default: return false;
                    }
            }
            if (advance) {
                const uint64_t location = location_ + delta * cie_.code_alignment;
                if (location > pc) return true;  // the rules in force at pc are those so far
                location_ = location;
            }
        }
        return true;
    }

private:
    static constexpr unsigned kMaxRemembered = 8;

    void set(uint64_t reg, RegisterRule rule) {
        if (reg == kRbp) rules_.rbp = rule;
        if (reg == kReturnAddress) rules_.return_address = rule;
    }
    void save_at_cfa(uint64_t reg, int64_t offset) { set(reg, {Rule::kAtCfa, offset}); }
    void restore(uint64_t reg) {
        const FrameRules defaults{};
        const FrameRules& initial = initial_ != nullptr ? *initial_ : defaults;
        if (reg == kRbp) rules_.rbp = initial.rbp;
        if (reg == kReturnAddress) rules_.return_address = initial.return_address;
    }
    void define_cfa(uint64_t reg, int64_t offset) {
        rules_.cfa_register = reg;
        rules_.cfa_offset = offset;
        rules_.cfa_by_expression = false;
    }

    const Cie& cie_;
    FrameRules& rules_;
    const FrameRules* initial_;
    uint64_t location_;
    FrameRules stack_[kMaxRemembered];
    unsigned remembered_ = 0;
};

// The walk's rule for the rules in force at the call (see eh_frame.h).
uint32_t walk_rule(const FrameRules& rules) {
    if (rules.return_address.rule == Rule::kUndefined) return kOutermostFrame;
    if (rules.cfa_by_expression || rules.return_address.rule != Rule::kAtCfa || rules.return_address.offset != -8)
        return kUnwalkableFrame;
    if (rules.cfa_register == kRbp) {
        const bool frame_pointer_layout =
            rules.cfa_offset == 16 && rules.rbp.rule == Rule::kAtCfa && rules.rbp.offset == -16;
        return frame_pointer_layout ? kFramePointerFrame : kUnwalkableFrame;
    }
    if (rules.cfa_register != kRsp) return kUnwalkableFrame;
    const int64_t size = rules.cfa_offset;
    if (size < 8 || size > kMaxFrameSize || size % 8 != 0) return kUnwalkableFrame;
    uint32_t slot = 0;
    if (rules.rbp.rule == Rule::kAtCfa) {
        // At CFA - 8 - 8 * slot, slot 1 to kMaxSavedRbpSlot (frame_sizes.h).
        const int64_t below_return_address = -rules.rbp.offset - 8;
        if (below_return_address <= 0 || below_return_address % 8 != 0 || below_return_address / 8 > kMaxSavedRbpSlot)
            return kUnwalkableFrame;
        slot = static_cast<uint32_t>(below_return_address / 8);
    } else if (rules.rbp.rule != Rule::kSameValue) {
        return kUnwalkableFrame;
    }
    return sized_frame(static_cast<uint32_t>(size), slot);
}

}  // namespace

uint32_t frame_rule_from_fde(const CfiSource& source, uint64_t fde_address, uint64_t pc) {
    CfiReader fde(source, fde_address, UINT64_MAX);
    bool is_64_bit;
    if (!read_record_length(fde, &is_64_bit)) return kUnwalkableFrame;
    const uint64_t cie_pointer_field = fde.address();
    uint64_t cie_pointer;
    if (!fde.fixed(is_64_bit ? 8 : 4, &cie_pointer) || cie_pointer == 0 || cie_pointer > cie_pointer_field)
        return kUnwalkableFrame;
    Cie cie;
    CfiReader cie_reader(source, cie_pointer_field - cie_pointer, UINT64_MAX);
    if (!read_cie(cie_reader, &cie) || cie.signal_frame) return kUnwalkableFrame;
    uint64_t begin, range;
    if (!fde.pointer(cie.fde_encoding, &begin) || !fde.pointer(cie.fde_encoding & 0x0f, &range))
        return kUnwalkableFrame;
    if (pc < begin || pc - begin >= range) return kUnwalkableFrame;
    if (cie.has_augmentation_data) {
        uint64_t data_length;
        if (!fde.uleb(&data_length) || !fde.skip(data_length)) return kUnwalkableFrame;
    }
    FrameRules rules;
    if (!CfaProgram(cie, &rules, nullptr, begin).run(cie_reader, UINT64_MAX)) return kUnwalkableFrame;
    const FrameRules initial = rules;
    if (!CfaProgram(cie, &rules, &initial, begin).run(fde, pc)) return kUnwalkableFrame;
    return walk_rule(rules);
}

}  // namespace leakwrap
