#!/usr/bin/env python3
"""Writes the ```cpp blocks of a Markdown file as files a translation unit includes.

Usage: extract_cpp_blocks.py FILE.md DISPLAY_NAME OUT_DIR PREFIX

OUT_DIR/PREFIX_block_N.inc holds block N (1-based, in file order) behind a #line directive, so a
compiler error names the Markdown line; OUT_DIR/PREFIX_blocks.hpp defines PREFIX_CPP_BLOCKS (how
many there are), so the harness notices a block it does not compile yet. Files are rewritten only
when their text changes (no rebuild for an edit elsewhere in the doc).
"""
import os
import re
import sys


def write_if_changed(path, text):
    try:
        with open(path, encoding="utf-8") as f:
            if f.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    md, display, out, prefix = sys.argv[1:5]
    lines = open(md, encoding="utf-8").read().split("\n")
    blocks, body, start, fence = [], None, 0, None
    for n, line in enumerate(lines, 1):
        if body is None:
            m = re.match(r"^\s*(```+)\s*(\S*)", line)
            if m:
                fence = m.group(1)
                if m.group(2).lower() in ("cpp", "c++", "cxx"):
                    body, start = [], n + 1
                else:
                    body, start = False, 0
            continue
        if line.strip() == fence:
            if body is not False:
                blocks.append((start, body))
            body = None
            continue
        if body is not False:
            body.append(line)
    os.makedirs(out, exist_ok=True)
    for i, (start, body) in enumerate(blocks, 1):
        text = '#line %d "%s"\n%s\n' % (start, display, "\n".join(body))
        write_if_changed(os.path.join(out, "%s_block_%d.inc" % (prefix, i)), text)
    write_if_changed(os.path.join(out, "%s_blocks.hpp" % prefix),
                     "#pragma once\n#define %s_CPP_BLOCKS %d\n" % (prefix.upper(), len(blocks)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
