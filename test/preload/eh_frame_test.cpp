// Reading a frame's rule from DWARF call frame information (preload/unwind/eh_frame.cpp), on CIEs and
// FDEs written here byte by byte as GCC and hand-written assembly emit them: the prologues and
// epilogues of sized and frame-pointer frames, remembered states, the outermost frame, and
// what a walk cannot follow (expressions, signal frames, far slots, records cut short or
// damaged), which must read as unwalkable, never past the bytes given.
#include "eh_frame.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "frame_sizes.h"

namespace leakwrap {
namespace {

constexpr uint64_t kBase = 0x10000;      // link-time address of the bytes below
constexpr uint64_t kFunction = 0x20000;  // the function the FDE covers
constexpr uint64_t kFunctionSize = 0x100;

// DW_CFA operations used below.
constexpr uint8_t kAdvance = 0x40;  // | delta
constexpr uint8_t kOffset = 0x80;   // | register, then ULEB128 offset / data alignment
constexpr uint8_t kRestore = 0xc0;  // | register
constexpr uint8_t kUndefined = 0x07;
constexpr uint8_t kRemember = 0x0a;
constexpr uint8_t kRestoreState = 0x0b;
constexpr uint8_t kDefCfa = 0x0c;
constexpr uint8_t kDefCfaRegister = 0x0d;
constexpr uint8_t kDefCfaOffset = 0x0e;
constexpr uint8_t kDefCfaExpression = 0x0f;
constexpr uint8_t kRbp = 6, kRsp = 7, kReturnAddress = 16;

class Cfi {
public:
    // A CIE as GCC writes it: code alignment 1, data alignment -8, return address column 16,
    // FDE addresses pc-relative 32-bit ('R' 0x1b); CFA = rsp + 8, return address at CFA - 8.
    explicit Cfi(const std::string& augmentation = "zR") {
        std::vector<uint8_t> body = {0, 0, 0, 0, 1};  // CIE id, version
        body.insert(body.end(), augmentation.begin(), augmentation.end());
        body.insert(body.end(), {0, 1, 0x78, kReturnAddress, 1, 0x1b});
        body.insert(body.end(), {kDefCfa, kRsp, 8, kOffset | kReturnAddress, 1});
        append_record(body);
    }

    // An FDE for [kFunction, kFunction + kFunctionSize) with these instructions; its address.
    uint64_t fde(const std::vector<uint8_t>& instructions) {
        const uint64_t address = kBase + bytes_.size();
        std::vector<uint8_t> body;
        put32(body, static_cast<uint32_t>(address + 4 - kBase));  // back to the CIE at kBase
        const uint64_t begin_field = address + 8;
        put32(body, static_cast<uint32_t>(kFunction - begin_field));
        put32(body, kFunctionSize);
        body.push_back(0);  // augmentation data length
        body.insert(body.end(), instructions.begin(), instructions.end());
        append_record(body);
        return address;
    }

    // The rule at kFunction + offset, reading at most `limit` bytes.
    uint32_t rule_at(uint64_t fde, uint64_t offset, std::size_t limit = SIZE_MAX) const {
        View view{this, limit < bytes_.size() ? limit : bytes_.size()};
        const CfiSource source{read, &view};
        return frame_rule_from_fde(source, fde, kFunction + offset);
    }

    std::vector<uint8_t>& bytes() { return bytes_; }

private:
    struct View {
        const Cfi* cfi;
        std::size_t size;
    };
    static std::size_t read(const void* context, uint64_t address, void* out, std::size_t size) {
        const auto* view = static_cast<const View*>(context);
        if (address < kBase || address - kBase >= view->size) return 0;
        const std::size_t available = view->size - (address - kBase);
        const std::size_t n = size < available ? size : available;
        std::memcpy(out, view->cfi->bytes_.data() + (address - kBase), n);
        return n;
    }
    static void put32(std::vector<uint8_t>& out, uint32_t value) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<uint8_t>(value >> (8 * i)));
    }
    void append_record(const std::vector<uint8_t>& body) {
        put32(bytes_, static_cast<uint32_t>(body.size()));
        bytes_.insert(bytes_.end(), body.begin(), body.end());
    }

    std::vector<uint8_t> bytes_;
};

// push rbp; push rbx; sub $40, rsp; ... ; add $40, rsp; pop rbx; pop rbp; ret — the epilogue
// in the middle, under remember/restore_state, with code after it.
const std::vector<uint8_t> kSizedFrame = {
    kAdvance | 1,
    kDefCfaOffset,
    16,
    kOffset | kRbp,
    2,  // 1: push rbp, rbp at CFA - 16
    kAdvance | 1,
    kDefCfaOffset,
    24,
    kOffset | 3,
    3,  // 2: push rbx
    kAdvance | 4,
    kDefCfaOffset,
    64,  // 6: sub $40, rsp
    kAdvance | 20,
    kRemember,
    kDefCfaOffset,
    24,  // 26: add $40, rsp
    kAdvance | 1,
    kDefCfaOffset,
    16,  // 27: pop rbx
    kAdvance | 1,
    kDefCfaOffset,
    8,
    kRestore | kRbp,  // 28: pop rbp
    kAdvance | 1,
    kRestoreState,  // 29: after ret, the body again
};

TEST(EhFrame, ASizedFrameHasEachInstructionsSizeAndItsSavedRbpSlot) {
    Cfi cfi;
    const uint64_t fde = cfi.fde(kSizedFrame);
    EXPECT_EQ(cfi.rule_at(fde, 0), sized_frame(8, 0));
    EXPECT_EQ(cfi.rule_at(fde, 1), sized_frame(16, 1));
    EXPECT_EQ(cfi.rule_at(fde, 2), sized_frame(24, 1));
    EXPECT_EQ(cfi.rule_at(fde, 5), sized_frame(24, 1));
    EXPECT_EQ(cfi.rule_at(fde, 6), sized_frame(64, 1));
    EXPECT_EQ(cfi.rule_at(fde, 25), sized_frame(64, 1));
    EXPECT_EQ(cfi.rule_at(fde, 26), sized_frame(24, 1));
    EXPECT_EQ(cfi.rule_at(fde, 27), sized_frame(16, 1));
    EXPECT_EQ(cfi.rule_at(fde, 28), sized_frame(8, 0));  // rbp restored to the CIE's: kept
    EXPECT_EQ(cfi.rule_at(fde, 29), sized_frame(64, 1));
    EXPECT_EQ(cfi.rule_at(fde, kFunctionSize - 1), sized_frame(64, 1));
}

TEST(EhFrame, CodeOutsideTheFdeIsNotItsFrame) {
    Cfi cfi;
    const uint64_t fde = cfi.fde(kSizedFrame);
    EXPECT_EQ(cfi.rule_at(fde, kFunctionSize), kUnwalkableFrame);
    EXPECT_EQ(cfi.rule_at(fde, uint64_t{0} - 1), kUnwalkableFrame);
}

TEST(EhFrame, AFramePointerPrologueIsWalkedThroughRbp) {
    Cfi cfi;
    const uint64_t fde = cfi.fde({kAdvance | 1, kDefCfaOffset, 16, kOffset | kRbp, 2,  // push rbp
                                  kAdvance | 3, kDefCfaRegister, kRbp});               // mov rsp, rbp
    EXPECT_EQ(cfi.rule_at(fde, 1), sized_frame(16, 1));
    EXPECT_EQ(cfi.rule_at(fde, 4), kFramePointerFrame);
    EXPECT_EQ(cfi.rule_at(fde, 80), kFramePointerFrame);
}

TEST(EhFrame, AnRbpBasedCfaWithoutTheProloguesLayoutIsUnwalkable) {
    Cfi cfi;
    const uint64_t rbp_not_saved = cfi.fde({kDefCfa, kRbp, 16});
    EXPECT_EQ(cfi.rule_at(rbp_not_saved, 0), kUnwalkableFrame);
    const uint64_t other_offset = cfi.fde({kOffset | kRbp, 2, kDefCfa, kRbp, 32});
    EXPECT_EQ(cfi.rule_at(other_offset, 0), kUnwalkableFrame);
}

TEST(EhFrame, WhatAWalkCannotFollowIsUnwalkable) {
    Cfi cfi;
    // A frame that realigns the stack: the CFA is an expression (here DW_OP_breg7 8).
    const uint64_t realigned = cfi.fde({kAdvance | 4, kDefCfaExpression, 2, 0x77, 8});
    EXPECT_EQ(cfi.rule_at(realigned, 0), sized_frame(8, 0));
    EXPECT_EQ(cfi.rule_at(realigned, 4), kUnwalkableFrame);
    // The CFA in another register (r10, as after GCC's DRAP setup).
    EXPECT_EQ(cfi.rule_at(cfi.fde({kDefCfa, 10, 0}), 0), kUnwalkableFrame);
    // rbp saved too far below the return address for a slot, or kept in another register.
    EXPECT_EQ(cfi.rule_at(cfi.fde({kDefCfaOffset, 96, kOffset | kRbp, 11}), 0), kUnwalkableFrame);
    EXPECT_EQ(cfi.rule_at(cfi.fde({kDefCfaOffset, 16, 0x09, kRbp, 3}), 0), kUnwalkableFrame);
    // A size that is not whole words.
    EXPECT_EQ(cfi.rule_at(cfi.fde({kDefCfaOffset, 20}), 0), kUnwalkableFrame);
}

TEST(EhFrame, AnUndefinedReturnAddressIsTheOutermostFrame) {
    Cfi cfi;
    EXPECT_EQ(cfi.rule_at(cfi.fde({kUndefined, kReturnAddress}), 0), kOutermostFrame);
}

TEST(EhFrame, ASignalFrameIsUnwalkable) {
    Cfi cfi("zRS");
    EXPECT_EQ(cfi.rule_at(cfi.fde({}), 0), kUnwalkableFrame);
}

// Records are read as far as the rule needs: cut before that, they are unwalkable; cut after,
// they give the whole record's rule.
TEST(EhFrame, RecordsCutShortAreUnwalkable) {
    Cfi cfi;
    const uint64_t fde = cfi.fde(kSizedFrame);
    const std::size_t whole = cfi.bytes().size();
    const uint32_t rule = sized_frame(64, 1);
    ASSERT_EQ(cfi.rule_at(fde, 6, whole), rule);
    std::size_t first_whole = whole;
    for (std::size_t limit = 0; limit < whole; ++limit) {
        const uint32_t found = cfi.rule_at(fde, 6, limit);
        if (found == rule && first_whole == whole) first_whole = limit;
        EXPECT_EQ(found, limit < first_whole ? kUnwalkableFrame : rule) << limit;
    }
    // The FDE's fields (17 bytes) and its instructions up to the advance past offset 6 (14).
    EXPECT_EQ(first_whole, fde - kBase + 17 + 14);
}

// Damaged records give some rule or none, and never read outside the bytes (the source returns 0
// there) nor loop: every byte of the CIE and FDE flipped to every value.
TEST(EhFrame, DamagedRecordsNeverReadOutsideTheirBytes) {
    Cfi pristine;
    const uint64_t fde = pristine.fde(kSizedFrame);
    const std::size_t whole = pristine.bytes().size();
    std::size_t still_sized = 0, unwalkable = 0;
    for (std::size_t at = 0; at < whole; ++at) {
        for (int value = 0; value < 256; ++value) {
            Cfi damaged = pristine;
            damaged.bytes()[at] = static_cast<uint8_t>(value);
            const uint32_t rule = damaged.rule_at(fde, 6);
            still_sized += is_sized_frame(rule);
            unwalkable += rule == kUnwalkableFrame;
        }
    }
    EXPECT_GT(still_sized, 0u);
    EXPECT_GT(unwalkable, 0u);
}

}  // namespace
}  // namespace leakwrap
