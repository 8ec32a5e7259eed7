#!/usr/bin/env python3
"""The generated blocks of the documentation (scripts/regenerate-docs.sh).

A generated block is a fenced code block whose line before is
    <!-- output: RECIPE -->
RECIPE names the function of scripts/regenerate-docs.sh that prints it.

    doc_blocks.py recipes FILE...          each recipe the files use, once
    doc_blocks.py update OUTPUTS FILE...   rewrite each block with OUTPUTS/RECIPE.txt
    doc_blocks.py check OUTPUTS FILE...    fail when a block no longer matches OUTPUTS/RECIPE.txt
                                           (a recipe without a file there was skipped)

check compares what does not vary from run to run: the lines, their order, their words, labels
and column headers, and source lines (file.c:26). Numbers (pids, addresses, sizes, counts,
timings) and their units of size, the width of columns, the lists of malloc's heaps and arenas
(VARYING_LISTS) and what depends on when the allocator was last read (TIMED_CLAUSES) are not
compared; of a line cut at a terminal's edge (CUT_WIDTH), only what both versions show whole.
"""
import pathlib
import re
import sys

MARKER = re.compile(r"^<!-- output: ([\w-]+) -->$")


def blocks(text):
    """(recipe, start, end) of every generated block: the lines text[start:end] are its body."""
    lines = text.split("\n")
    found = []
    for i, line in enumerate(lines):
        match = MARKER.match(line)
        if not match:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit(f"the marker {line!r} is not followed by a fenced block")
        end = next((j for j in range(i + 2, len(lines)) if lines[j] == "```"), None)
        if end is None:
            raise SystemExit(f"the block after {line!r} is not closed")
        found.append((match.group(1), i + 2, end))
    return lines, found


# A source line stays: "leaky_cache.c:26", "fiddle_leak.rb:36", "<internal:…kernel_require.rb>:85".
SOURCE_LINE = re.compile(r"(\.[A-Za-z]+>?:)(\d+)")
NUMBER = re.compile(r"0x[0-9a-fA-F]+|\d+(?:[.,]\d+)*")


# Lines whose list varies from run to run in length and order: only their label is compared.
# Which arenas glibc gives a program's threads depends on how the threads were scheduled.
VARYING_LISTS = ("malloc's heaps by resident size:", "arenas holding the most free memory:")
# Whether the allocator's own count is weighed against the heaps, and so cited in a finding,
# depends on how long before the report it was read, and on what was allocated since.
TIMED_CLAUSES = re.compile(
    r" \(not weighed against the heaps shown above: [^()]*\)"
    r"|, (?:nothing allocated or freed since|\d+ blocks allocated and \d+ freed since \([^()]*\))"
    r"|by glibc's own count .*? which malloc_trim\(0\) would return"
    r"(?:; the rest is in free chunks smaller than a page between live blocks, which no trim returns "
    r"\(fragmentation\))?; ")
# A size's unit follows its number (1023.9 KiB one run, 1.0 MiB the next).
SIZE = re.compile(r"N (?:B|KiB|MiB|GiB|TiB)\b")


# top's screens are captured 150 columns wide (regenerate-docs.sh's top_screen): a line that long
# was cut there, at a place that moves with the widths of the numbers before it.
CUT_WIDTH = 150


def normalized(line):
    for label in VARYING_LISTS:
        if line.strip().startswith(label):
            return label
    line = TIMED_CLAUSES.sub("", line)
    kept = []

    def keep(match):
        kept.append(match.group(2))
        return match.group(1) + "\0"

    line = SOURCE_LINE.sub(keep, line)
    line = SIZE.sub("N bytes", NUMBER.sub("N", line))
    for number in kept:
        line = line.replace("\0", number, 1)
    # Columns line up by padding that depends on the numbers' widths.
    return " ".join(line.split())


def same_line(documented, printed):
    """Normalized lines, each with whether it was cut: a cut line's words but its last (perhaps
    cut short) must begin the other line."""
    (doc, doc_cut), (now, now_cut) = documented, printed
    if not doc_cut and not now_cut:
        return doc == now
    doc_words = doc.split()[:-1] if doc_cut else doc.split()
    now_words = now.split()[:-1] if now_cut else now.split()
    shown = min(len(doc_words), len(now_words))
    return doc_words[:shown] == now_words[:shown]


def main():
    command, args = sys.argv[1], sys.argv[2:]
    if command == "recipes":
        seen = []
        for path in args:
            for recipe, _, _ in blocks(pathlib.Path(path).read_text())[1]:
                if recipe not in seen:
                    seen.append(recipe)
        print("\n".join(seen))
        return 0
    outputs, paths = pathlib.Path(args[0]), args[1:]
    failed = 0
    for path in paths:
        text = pathlib.Path(path).read_text()
        lines, found = blocks(text)
        for recipe, start, end in reversed(found):
            output = outputs / f"{recipe}.txt"
            if not output.exists():
                if command == "check":
                    print(f"{path}: {recipe}: skipped")
                continue
            fresh = output.read_text().rstrip("\n").split("\n")
            if command == "update":
                lines[start:end] = fresh
                continue
            documented = [(normalized(line), len(line) >= CUT_WIDTH) for line in lines[start:end]]
            printed = [(normalized(line), len(line) >= CUT_WIDTH) for line in fresh]
            if len(documented) == len(printed) and all(map(same_line, documented, printed)):
                print(f"{path}: {recipe}: matches")
                continue
            failed += 1
            print(f"{path}: {recipe}: the documented output no longer matches what the code prints")
            print("  (scripts/regenerate-docs.sh rewrites it); first difference, numbers as N:")
            for i in range(max(len(documented), len(printed))):
                doc = documented[i] if i < len(documented) else ("(no line)", False)
                now = printed[i] if i < len(printed) else ("(no line)", False)
                if not same_line(doc, now):
                    doc, now = doc[0], now[0]
                    print(f"  line {i + 1} documented: {doc}\n  line {i + 1} printed now: {now}")
                    break
        if command == "update":
            pathlib.Path(path).write_text("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
