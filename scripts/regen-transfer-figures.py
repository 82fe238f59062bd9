#!/usr/bin/env python3
"""Regenerates every figure derived from the cross-hardware transfer after a change that
moves predictions (docs/cost-model-and-calibration.md, "Transfer across GPU generations").

    python3 scripts/regen-transfer-figures.py [BUILD_DIR]    (default: build)

Rewrites, from the programs' own output:
  simulator/calibration.cc            CompiledTransferBands()'s rows (shardplan-calibrate --bands)
  tests/simulator/calibration_transfer_test.cc
                                      kH100ToBlackwell, kB200ToOthers, the held-out coverage row
                                      counts and the twenty-run groups' figures
  tests/simulator/data/evaluation_fingerprints.txt
  docs/cost-model-and-calibration.md  the two transfer tables and the twenty-run table
  docs/calibration/accuracy-report.md the leave-one-hardware-out and held-out coverage tables
and prints the totals the prose quotes, which stay hand-written.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.path.join(ROOT, sys.argv[1] if len(sys.argv) > 1 else "build")
DATA = "simulator/calibration/data"
BLACKWELL = [f"{DATA}/blackwell_measured_latency.csv"]
FOUR = BLACKWELL + [f"{DATA}/h100_measured_latency.csv", f"{DATA}/h100_moe_latency.csv",
                    f"{DATA}/h100_validation_latency.csv"]
TEST = "tests/simulator/calibration_transfer_test.cc"
COST_DOC = "docs/cost-model-and-calibration.md"
REPORT_DOC = "docs/calibration/accuracy-report.md"
GROUP_HEADER = "| hardware | engine | model | weights | rows |"


def run(args, check=True):
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True)
    if check and out.returncode != 0:
        sys.exit(f"failed: {' '.join(args)}\n{out.stderr[-2000:]}")
    return out.stdout


def build(*targets):
    run(["cmake", "--build", BUILD, "-j2", "--target", *targets])


def calibrate(csvs, *flags):
    args = [os.path.join(BUILD, "bin/shardplan-calibrate")]
    for c in csvs:
        args += ["--transfer-csv", c]
    return run(args + list(flags))


def tables(text, header):
    """Every markdown table in `text` whose first line starts with `header`."""
    found, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        if lines[i].startswith(header):
            j = i + 2
            while j < len(lines) and lines[j].startswith("|"):
                j += 1
            found.append([[c.strip() for c in row.strip("|").split("|")]
                          for row in lines[i + 2:j]])
            i = j
        else:
            i += 1
    return found


def table_text(text, header):
    lines = text.splitlines()
    start = next(i for i, l in enumerate(lines) if l.startswith(header))
    end = start + 2
    while end < len(lines) and lines[end].startswith("|"):
        end += 1
    return "\n".join(lines[start:end])


def read(path):
    with open(os.path.join(ROOT, path)) as f:
        return f.read()


def write(path, text):
    with open(os.path.join(ROOT, path), "w") as f:
        f.write(text)


def replace_table_after(doc, anchor, new_table):
    """Replaces the first markdown table after `anchor` (a unique string)."""
    at = doc.index(anchor)
    start = at if anchor.startswith("|") else doc.index("\n|", at) + 1
    end = start
    while True:
        nl = doc.find("\n", end)
        if nl < 0 or not doc.startswith("|", nl + 1):
            end = len(doc) if nl < 0 else nl
            break
        end = nl + 1
    return doc[:start] + new_table + doc[end:]


def pct(cell):
    return float(cell.rstrip("%"))


def documented_array(rows):
    out = []
    for r in rows:
        hw, engine, model, dtype, n, infeasible, tpot, _, ttft = r[:9]
        out.append(f'    {{"{hw}", "{engine}", "{model}", "{dtype}", {n}, {infeasible}, '
                   f'{pct(tpot):.1f}, {pct(ttft):.1f}}},')
    return "\n".join(out)


def replace_array(text, name, body):
    pattern = re.compile(r"(constexpr Documented " + name + r"\[\] = \{\n)(.*?)(\n\};)", re.S)
    assert pattern.search(text), name
    return pattern.sub(lambda m: m.group(1) + body + m.group(3), text, count=1)


def total(rows, hardware):
    return next(r for r in rows if r[0] == hardware and r[1] == "*" and r[2] == "*")


def main():
    build("shardplan-calibrate")

    # 1. Bands first: the transfer tables' p10-p90 columns use them.
    bands_out = calibrate(FOUR, "--bands")
    cpp = bands_out.split("Cross-hardware bands (C++ for CompiledTransferBands()):\n", 1)[1]
    cpp_rows = [l.strip() for l in cpp.splitlines() if l.strip().startswith('{"')]
    cal = read("simulator/calibration.cc")
    fn = cal.index("const std::vector<ErrorBand>& CompiledTransferBands()")
    open_at = cal.index("new std::vector<ErrorBand>{\n", fn) + len("new std::vector<ErrorBand>{\n")
    close_at = cal.index("\n      };", open_at)
    cal = cal[:open_at] + "\n".join("          " + r for r in cpp_rows) + cal[close_at:]
    write("simulator/calibration.cc", cal)
    coverage = tables(bands_out.split("Held out:", 1)[1], "| hardware | engine | model kind |")
    build("shardplan-calibrate", "simulator_test", "shardplan-evaluation-dump")

    # 2. Both directions and the GB200 fit.
    forward = calibrate(BLACKWELL)
    reverse = calibrate(FOUR, "--fit-on", "b200-sxm-180gb")
    gb200 = calibrate(BLACKWELL, "--fit-on", "gb200-nvl72")
    fwd_rows = tables(forward, GROUP_HEADER)[-1]
    rev_rows = tables(reverse, GROUP_HEADER)[-1]
    gb_rows = tables(gb200, GROUP_HEADER)[-1]

    test = read(TEST)
    test = replace_array(test, "kH100ToBlackwell", documented_array(fwd_rows))
    test = replace_array(test, "kB200ToOthers", documented_array(rev_rows))
    # Held-out coverage row counts: feasible rows of each scored hardware.
    for hw, rows in (("h100-sxm-80gb", rev_rows), ("b200-sxm-180gb", fwd_rows)):
        t = total(rows, hw)
        feasible = int(t[4]) - int(t[5])
        test = re.sub(r'("' + hw + r'", )\d+(, 0\.\d+)', lambda m: m.group(1) + str(feasible)
                      + m.group(2), test, count=1)
    write(TEST, test)

    cost = read(COST_DOC)
    cost = replace_table_after(cost, "**Fit H100 → test B200/GB200**", table_text(forward, GROUP_HEADER))
    cost = replace_table_after(cost, "**Fit B200 → test H100 and GB200**",
                               table_text(reverse.split("Fitted on the rows of", 1)[1], GROUP_HEADER))

    # 3. Twenty runs of one group (the test prints each group's docs row).
    build("simulator_test")
    twenty = run([os.path.join(BUILD, "bin/simulator_test"),
                  "--gtest_filter=CalibrationTransferTest.TwentyBlackwellRunsOfOneGroup"], check=False)
    twenty_rows = [l for l in twenty.splitlines() if re.match(r"\| \w+:[\w.\-]+ \| 20 / ", l)]
    test = read(TEST)
    for line in twenty_rows:
        engine, model = line.split("|")[1].strip().split(":")
        nums = [float(x) for x in re.findall(r"([\d.]+)%", line)]
        test = re.sub(r'Group\{"' + engine + r'", "' + re.escape(model) + r'", [^}]*\}',
                      f'Group{{"{engine}", "{model}", {nums[0]:.1f}, {nums[1]:.1f}, '
                      f'{nums[2]:.1f}, {nums[3]:.1f}}}', test)
    write(TEST, test)
    for line in twenty_rows:
        key = line.split("|")[1].strip()
        cost = re.sub(r"^\| " + re.escape(key) + r" \| 20 / .*$", lambda m: line.replace("->", "→"),
                      cost, count=1, flags=re.M)
    write(COST_DOC, cost)

    # 4. Accuracy report: leave one hardware out, and the held-out coverage.
    def summary(fit, rows, hardware, name):
        t = total(rows, hardware)
        return (f"| {fit} | {name} | {t[4]} | {t[6]} | {t[7]} | {t[8]} | {t[9]} | {t[10]} | "
                f"{t[11]} |")
    lines = [summary("H100", fwd_rows, "b200-sxm-180gb", "B200"),
             summary("H100", fwd_rows, "gb200-nvl72", "GB200"),
             summary("B200", rev_rows, "h100-sxm-80gb", "H100"),
             summary("B200", rev_rows, "gb200-nvl72", "GB200"),
             summary("GB200", gb_rows, "b200-sxm-180gb", "B200")]
    report = read(REPORT_DOC)
    head = ("| fit on | test on | rows | TPOT MAPE | TPOT median pred/meas | TTFT MAPE | "
            "TTFT median pred/meas | TPOT in p10-p90 | TTFT in p10-p90 |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
    report = replace_table_after(report, "## Across hardware", head + "\n".join(lines))
    held = []
    for label, cov, hw in (("H100 fit → B200 | B200 fit → H100", coverage[0], "h100-sxm-80gb"),
                           ("B200 fit → H100 | H100 fit → B200", coverage[1], "b200-sxm-180gb")):
        t = next(r for r in cov if r[0] == hw and r[1] == "*")
        held.append(f"| {label} | {t[3]} | {t[6]} | {t[7]} |")
    report = replace_table_after(
        report, "| bands from | scored on |",
        "| bands from | scored on | rows | TPOT in p10-p90 | TTFT in p10-p90 |\n"
        "|---|---|---:|---:|---:|\n" + "\n".join(held))
    write(REPORT_DOC, report)

    # 5. Evaluation fingerprints.
    write("tests/simulator/data/evaluation_fingerprints.txt",
          run([os.path.join(BUILD, "bin/shardplan-evaluation-dump"), "--fingerprints"]))

    print("forward (H100 fit):", " | ".join(total(fwd_rows, "b200-sxm-180gb")[4:10]))
    print("reverse (B200 fit):", " | ".join(total(rev_rows, "h100-sxm-80gb")[4:10]))
    print("held-out coverage:")
    print("\n".join(held))
    print("twenty runs:")
    print("\n".join(twenty_rows))
    print("Hand-written prose to update: 'Current figures' and 'What is missing' in",
          COST_DOC, "and the prose around the tables in", REPORT_DOC)


if __name__ == "__main__":
    main()
