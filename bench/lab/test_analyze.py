#!/usr/bin/env python3
"""Tests of bench/lab/analyze.py on a synthetic lab (bench/lab/make_synthetic.py).

usage: python3 bench/lab/test_analyze.py        (standard library only; the plot test runs only
       if matplotlib is importable by this interpreter, e.g. /var/tmp/labvenv/bin/python)
"""

import csv
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import analyze  # noqa: E402
import make_synthetic  # noqa: E402

ANALYZE = os.path.join(HERE, "analyze.py")


def run_analyze(lab, *flags):
    return subprocess.run([sys.executable, ANALYZE, lab, *flags], capture_output=True,
                          text=True, timeout=300)


def read_results(lab):
    with open(os.path.join(lab, "results.csv"), newline="") as f:
        return {row["method"]: row for row in csv.DictReader(f)}


def num(row, key):
    return float(row[key])


class Unit(unittest.TestCase):
    def test_percentile_nearest_rank(self):
        p = analyze.percentile
        values = list(range(1, 101))
        self.assertEqual(p(values, 50), 50)
        self.assertEqual(p(values, 99), 99)
        self.assertEqual(p(values, 100), 100)
        self.assertEqual(p([1, 2, 3, 4], 50), 2)  # rank ceil(2.0) = 2, not interpolated 2.5
        self.assertEqual(p([1, 2, 3, 4], 99), 4)
        self.assertEqual(p([7], 99), 7)
        self.assertIsNone(p([], 50))

    def test_longest_gap_counts_edges(self):
        g = analyze.longest_gap
        self.assertAlmostEqual(g([1.0, 2.0, 2.5], 0.0, 3.0), 1.0)
        self.assertAlmostEqual(g([0.5, 1.0], 0.0, 5.0), 4.0)  # last completion -> window end
        self.assertAlmostEqual(g([3.0, 3.1], 0.0, 4.0), 3.0)  # window start -> first
        self.assertAlmostEqual(g([], 0.0, 4.0), 4.0)
        self.assertAlmostEqual(g([-5.0, 10.0], 0.0, 4.0), 4.0)  # outside the window: ignored

    def test_tps_bins(self):
        # removal of 0.4 s: the during bin is bin 0, which contains it
        bounds = (70.0, 100.0, 100.4, 140.4)
        before, during, after = analyze.tps_ranges(bounds)
        self.assertEqual(before, (-30, -1))
        self.assertEqual(during, (0, 0))
        self.assertEqual(after, (0, 39))
        # removal of 3.5 s, victims started 5 s before: bins 0..2 are fully inside
        bounds = (100.0 - 5 + 2, 100.0, 103.5, 143.5)
        before, during, after = analyze.tps_ranges(bounds)
        self.assertEqual(before, (-3, -1))
        self.assertEqual(during, (0, 2))
        self.assertEqual(after, (0, 42))

    def test_sig3(self):
        s = analyze.sig3
        self.assertEqual(s(14.234), "14.2")
        self.assertEqual(s(0.020784), "0.0208")
        self.assertEqual(s(2988.8), "2989")
        self.assertEqual(s(199.6), "200")
        self.assertEqual(s(9.996), "10.0")
        self.assertEqual(s(0), "0")
        self.assertEqual(s(None), "")


class Synthetic(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="impact-lab-test-", dir="/tmp")
        cls.lab = make_synthetic.make_lab(os.path.join(cls.tmp, "lab"))
        cls.proc = run_analyze(cls.lab, "--no-plots")
        cls.rows = read_results(cls.lab) if cls.proc.returncode == 0 else {}

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_exit_and_outputs(self):
        self.assertEqual(self.proc.returncode, 0, self.proc.stderr)
        for name in ("results.csv", "results.md", "index.md"):
            self.assertTrue(os.path.exists(os.path.join(self.lab, name)), name)
        self.assertEqual(set(self.rows), {"rm", "loop", "reclaim"})

    def test_removal_times(self):
        for method, wall in (("rm", 10), ("loop", 30), ("reclaim", 12)):
            self.assertAlmostEqual(num(self.rows[method], "wall_s"), wall, places=3)
            self.assertAlmostEqual(num(self.rows[method], "removal_s"), wall, places=3)

    def test_baseline(self):
        for method, row in self.rows.items():
            self.assertAlmostEqual(num(row, "probe_before_p50_ms"), 2.0, delta=0.2, msg=method)
            self.assertLessEqual(num(row, "probe_before_p99_ms"), 2.2 + 1e-6, msg=method)
            # before = [rm_start - 13 s, rm_start): clipped to victims_start + 2 s
            self.assertAlmostEqual(num(row, "probe_before_n"), 650, delta=2, msg=method)
            self.assertLess(num(row, "gap_base_s"), 0.025, msg=method)
            self.assertAlmostEqual(num(row, "tps_base"), 200, delta=10, msg=method)
            self.assertAlmostEqual(num(row, "pg_before_p50_ms"), 20, delta=1, msg=method)

    def test_rm_stalls(self):
        rm = self.rows["rm"]
        # 3 s stall 4 s into the removal: one op of ~3 s, no completion for ~3 s
        self.assertAlmostEqual(num(rm, "probe_during_max_ms"), 3000, delta=30)
        self.assertAlmostEqual(num(rm, "gap_s"), 3.0, delta=0.05)
        self.assertAlmostEqual(num(rm, "pg_gap_s"), 3.0, delta=0.06)
        # 1 s stall 5 s after rm returned: shows in "after" and in max during+after
        self.assertAlmostEqual(num(rm, "probe_after_max_ms"), 1000, delta=30)
        self.assertAlmostEqual(num(rm, "probe_max_during_after_ms"), 3000, delta=30)
        self.assertAlmostEqual(num(rm, "pg_after_max_ms"), 1020, delta=40)
        # probe 8 ms during the removal, 2 ms after
        self.assertAlmostEqual(num(rm, "probe_during_p50_ms"), 8.0, delta=0.4)
        self.assertAlmostEqual(num(rm, "probe_after_p50_ms"), 2.0, delta=0.2)
        self.assertAlmostEqual(num(rm, "p99_ratio"), 4.0, delta=0.4)
        # ops: 10 s of removal minus the 3 s stall, at 20 ms
        self.assertAlmostEqual(num(rm, "probe_during_n"), 350, delta=3)
        # pgbench frozen for whole seconds
        self.assertEqual(num(rm, "tps_min_during"), 0)
        self.assertEqual(num(rm, "tps_min_after"), 0)
        self.assertAlmostEqual(num(rm, "pg_during_p50_ms"), 40, delta=2)

    def test_loop_no_stall(self):
        loop = self.rows["loop"]
        self.assertLess(num(loop, "gap_s"), 0.03)
        self.assertLess(num(loop, "pg_gap_s"), 0.04)
        self.assertAlmostEqual(num(loop, "probe_during_p50_ms"), 3.0, delta=0.2)
        self.assertLessEqual(num(loop, "probe_max_during_after_ms"), 3.3 + 1e-6)
        self.assertAlmostEqual(num(loop, "tps_min_during"), 150, delta=10)
        self.assertAlmostEqual(num(loop, "tps_min_after"), 150, delta=10)
        self.assertAlmostEqual(num(loop, "probe_during_n"), 1500, delta=3)

    def test_reclaim_bump(self):
        rc = self.rows["reclaim"]
        self.assertLess(num(rc, "gap_s"), 0.03)
        self.assertAlmostEqual(num(rc, "probe_during_p50_ms"), 4.0, delta=0.2)
        self.assertAlmostEqual(num(rc, "p99_ratio"), 2.0, delta=0.2)
        self.assertLessEqual(num(rc, "probe_max_during_after_ms"), 4.4 + 1e-6)
        self.assertAlmostEqual(num(rc, "tps_min_during"), 160, delta=10)

    def test_markdown(self):
        with open(os.path.join(self.lab, "results.md")) as f:
            md = f.read()
        self.assertIn("| kernel | 6.1.0-synthetic |", md)  # lab meta verbatim
        self.assertIn("dm-delay emulation \\| made up", md)  # '|' escaped in the table
        self.assertIn("## ext4 · hdd-7200 · frag", md)
        lines = [l for l in md.splitlines() if l.startswith("| rm |") or l.startswith("| loop |")
                 or l.startswith("| reclaim |")]
        self.assertEqual([l.split("|")[1].strip() for l in lines], ["rm", "loop", "reclaim"])
        rm = lines[0].split("|")
        self.assertEqual(rm[2].strip(), "10.0")  # removal s, 3 significant digits
        self.assertEqual(rm[6].strip(), "3.00")  # longest gap
        self.assertTrue(rm[7].strip().endswith("/ 0 / 0"), rm[7])  # pg tps min during / after
        self.assertEqual(len(rm), len(analyze.MD_HEADER) + 2)

    def test_missing_victims(self):
        lab = os.path.join(self.tmp, "lab-missing")
        shutil.copytree(self.lab, lab)
        os.remove(os.path.join(lab, "runs", "ext4__frag__loop", "probe.log"))
        for name in os.listdir(os.path.join(lab, "runs", "ext4__frag__reclaim")):
            if name.startswith("pgbench_log."):
                os.remove(os.path.join(lab, "runs", "ext4__frag__reclaim", name))
        proc = run_analyze(lab, "--no-plots")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        rows = read_results(lab)
        self.assertEqual(rows["loop"]["gap_s"], "")
        self.assertEqual(rows["loop"]["probe_during_p99_ms"], "")
        self.assertNotEqual(rows["loop"]["tps_base"], "")
        self.assertEqual(rows["reclaim"]["tps_base"], "")
        self.assertEqual(rows["reclaim"]["pg_gap_s"], "")
        self.assertNotEqual(rows["reclaim"]["gap_s"], "")

    def test_repeated_runs_are_summarized_and_paired_with_rm(self):
        lab = os.path.join(self.tmp, "lab-repeat")
        os.makedirs(os.path.join(lab, "runs"))
        with open(os.path.join(lab, "meta.tsv"), "w") as f:
            f.write("kernel\tsynthetic\n")
        # Three repetitions drifting slower together: reclaim stays 1.2x rm's time each time.
        for rep, slow in ((1, 1.0), (2, 1.5), (3, 2.0)):
            for method in ("rm", "reclaim"):
                make_synthetic.write_run(lab, method, rep=rep, slow=slow)
        proc = run_analyze(lab, "--no-plots")
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertIn("repeat.md", proc.stdout)
        with open(os.path.join(lab, "repeat.csv"), newline="") as f:
            rows = {r["method"]: r for r in csv.DictReader(f)}
        self.assertEqual(rows["rm"]["n"], "3")
        self.assertAlmostEqual(float(rows["rm"]["removal_median"]), 15.0, delta=0.01)
        # Unpaired, the drift makes a wide interval; paired, it cancels.
        self.assertGreater(float(rows["rm"]["removal_ci_half"]), 5.0)
        self.assertAlmostEqual(float(rows["reclaim"]["paired_removal_median"]), 1.2, delta=0.01)
        self.assertLess(float(rows["reclaim"]["paired_removal_ci_half"]), 0.01)
        self.assertAlmostEqual(float(rows["rm"]["paired_removal_median"]), 1.0, delta=1e-9)
        with open(os.path.join(lab, "repeat.md")) as f:
            md = f.read()
        self.assertIn("| reclaim | 3 |", md)
        self.assertIn("r3:", md)

    def test_t_interval(self):
        import repeat
        n, med, mean, half = repeat.summary([1.0, 2.0, 3.0, None])
        self.assertEqual((n, med, mean), (3, 2.0, 2.0))
        self.assertAlmostEqual(half, 4.303 * 1.0 / 3 ** 0.5, places=3)
        self.assertEqual(repeat.summary([]), (0, None, None, None))
        self.assertEqual(repeat.summary([5.0])[3], None)

    def test_harm_classes_the_disk_time_of_the_removal(self):
        import harm
        lab = os.path.join(self.tmp, "lab-harm")
        run = os.path.join(lab, "runs", "hdd-7200__ext4__tree__rm")
        os.makedirs(run)
        with open(os.path.join(lab, "layout-emu-ext4-tree.txt"), "w") as f:
            f.write("Block size:               4096\n"
                    "Group 0: (Blocks 0-32767)\n"
                    "  Block bitmap at 50 (+50)\n  Inode bitmap at 60 (+60)\n"
                    "  Inode table at 100-199 (+100)\n"
                    "== journal (inode 8)\nEXTENTS:\n(0-99):1000-1099\n")
        with open(os.path.join(run, "meta.tsv"), "w") as f:
            f.write("method\trm\nrep\t1\n")
        with open(os.path.join(run, "events.tsv"), "w") as f:
            f.write("victims_start\t998.0\nrm_start\t1001.0\nrm_end\t1003.0\n")
        bs = 4096
        with open(os.path.join(run, "disk.trace"), "w") as f:
            f.write("# epoch 1000.0\n")
            f.write(f"0.5 R {150 * bs} 4096 0.0 500.0\n")  # before the removal: not counted
            f.write(f"1.1 R {150 * bs} 4096 2.0 400.0\n")  # inode table read
            f.write(f"1.5 W {1050 * bs} 8192 10.0 200.0\n")  # journal write
            f.write(f"1.6 F 0 0 20.0 100.0\n")  # flush
            f.write(f"1.7 W {55 * bs} 4096 0.0 100.0\n")  # not a bitmap block (55): other
            f.write(f"1.8 W {60 * bs} 4096 0.0 100.0\n")  # inode bitmap
        self.assertEqual(harm.main(["harm.py", lab]), 0)
        with open(os.path.join(lab, "harm.csv"), newline="") as f:
            rows = {r["phase"]: r for r in csv.DictReader(f)}
        # Before: the same length of time before the removal (from 1000.5 s on: one read).
        self.assertEqual(rows["before"]["inode-table_R_n"], "1")
        self.assertAlmostEqual(float(rows["before"]["busy_share"]), 0.5 / 1.0)
        row = rows["during"]
        self.assertAlmostEqual(float(row["busy_share"]), 0.45)  # 900 ms of 2 s
        self.assertAlmostEqual(float(row["inode-table_R_busy"]), 0.2)
        self.assertEqual(row["inode-table_R_n"], "1")
        self.assertAlmostEqual(float(row["journal_W_busy"]), 0.1)
        self.assertEqual(row["journal_W_MiB"], "0.01")
        self.assertAlmostEqual(float(row["flush_F_busy"]), 0.05)
        self.assertEqual(row["bitmap_W_n"], "1")
        self.assertEqual(row["other_W_n"], "1")
        self.assertEqual(row["other_R_n"], "0")

    def test_no_runs_fails(self):
        empty = os.path.join(self.tmp, "empty")
        os.makedirs(os.path.join(empty, "runs"), exist_ok=True)
        proc = run_analyze(empty)
        self.assertNotEqual(proc.returncode, 0)
        self.assertEqual(len(proc.stderr.strip().splitlines()), 1, proc.stderr)


def have_matplotlib():
    try:
        import matplotlib  # noqa: F401
        return True
    except ImportError:
        return False


@unittest.skipUnless(have_matplotlib(), "matplotlib not importable")
class Plots(unittest.TestCase):
    def test_png(self):
        with tempfile.TemporaryDirectory(prefix="impact-lab-plot-", dir="/tmp") as tmp:
            lab = make_synthetic.make_lab(os.path.join(tmp, "lab"))
            proc = run_analyze(lab)
            self.assertEqual(proc.returncode, 0, proc.stderr)
            png = os.path.join(lab, "timeline-hdd-7200-ext4-frag.png")
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
            with open(os.path.join(lab, "index.md")) as f:
                self.assertIn("timeline-hdd-7200-ext4-frag.png", f.read())


if __name__ == "__main__":
    unittest.main()
