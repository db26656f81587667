"""docs/PERFORMANCE.md is generated from the bench results files (issue
34): each of its four results blocks names the file under bench/results/
it came from, is exactly what bench/report.py makes of that file, and has
its charts under docs/img/. A figure edited by hand, a results file
removed or a chart missing fails here (make perf-report fixes the page).
"""

import importlib.util
import os
import re
import shutil
import tempfile

from harness import REPO


def report():
    spec = importlib.util.spec_from_file_location(
        "report_bench_py", os.path.join(REPO, "bench", "report.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_performance_page_tables_match_their_results_files():
    rep = report()
    text = open(rep.PAGE).read()
    blocks = rep.blocks(text)
    assert sorted(k for k, _, _, _ in blocks) == sorted(rep.BLOCKS), blocks
    for kind, body, _, _ in blocks:
        path = rep.cited(body)
        # generated from a results file, not "no results file yet"
        assert path is not None, "%s: cites no results file" % kind
        assert os.path.dirname(path) == os.path.join(REPO, "bench",
                                                     "results"), path
        assert os.path.basename(path).startswith(kind + "-"), path
        assert "|" in body or kind == "repl", (kind, body)
    assert rep.check(rep.PAGE, rep.IMG) == []


def test_performance_page_check_catches_an_edited_figure():
    rep = report()
    text = open(rep.PAGE).read()
    kind, body, start, end = rep.blocks(text)[0]
    # the first number of the block's first table row, one more
    rows = [l for l in body.splitlines() if l.startswith("| ") and
            re.search(r"\| [\d,.]+ \|", l) and "---" not in l]
    assert rows, body
    m = re.search(r"\| ([\d,]+)(\.\d+)? \|", rows[0])
    old = m.group(0)
    new = old.replace(m.group(1), str(int(m.group(1).replace(",", "")) + 1),
                      1)
    tampered = text[:start] + body.replace(rows[0], rows[0].replace(
        old, new, 1), 1) + text[end:]
    with tempfile.TemporaryDirectory() as d:
        page = os.path.join(d, "PERFORMANCE.md")
        with open(page, "w") as f:
            f.write(tampered)
        bad = rep.check(page, rep.IMG)
        assert len(bad) == 1 and bad[0].startswith(kind + ": the table "
                                                   "differs"), bad
        # a chart gone
        img = os.path.join(d, "img")
        shutil.copytree(rep.IMG, img)
        os.remove(os.path.join(img, rep.CHARTS[kind][0]))
        bad = rep.check(rep.PAGE, img)
        assert bad == ["%s: chart docs/img/%s is missing" % (
            kind, rep.CHARTS[kind][0])], bad
