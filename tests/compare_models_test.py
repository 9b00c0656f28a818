#!/usr/bin/python3
"""bench/compare_models.py: one round of each runtime, and the best of several rounds (each
row's smallest median over the rounds, per runtime, and Node's call cost the same way).
Usage: compare_models_test.py"""
import json
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench",
                      "compare_models.py")


def idem_json(rows):
    """Google Benchmark's JSON with a median aggregate (and a mean to ignore) per row, in us."""
    benchmarks = []
    for name, us in rows.items():
        for aggregate, value in (("mean", us * 10), ("median", us)):
            benchmarks.append({"name": f"{name}/real_time_{aggregate}",
                               "run_name": f"{name}/real_time", "run_type": "aggregate",
                               "aggregate_name": aggregate, "real_time": value,
                               "time_unit": "us"})
    return {"benchmarks": benchmarks}


class CompareModelsTest(unittest.TestCase):
    def run_script(self, *files):
        with tempfile.TemporaryDirectory() as tmp:
            paths = []
            for group in files:
                names = []
                for i, content in enumerate(group):
                    path = os.path.join(tmp, f"{len(paths)}_{i}.json")
                    with open(path, "w") as f:
                        json.dump(content, f)
                    names.append(path)
                paths.append(",".join(names))
            out = subprocess.run([sys.executable, SCRIPT, *paths], capture_output=True,
                                 text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return {line.split(" | ")[0].lstrip("| "): line.split(" | ")
                for line in out.stdout.splitlines() if line.startswith("| ")}, out.stdout

    def test_one_round(self):
        rows, text = self.run_script(
            [idem_json({"oww_frame/threads:1": 400.0})],
            [{"node_tiny": 10000.0, "oww_frame/threads:1": 1010000.0, "_version": "1.30.0"}])
        frame = rows["oww_frame/threads:1"]
        self.assertEqual(frame[1], "400.0 us")
        self.assertEqual(frame[2], "1.01 ms")
        self.assertEqual(frame[3], "1.00 ms")  # less Node's call
        self.assertEqual(frame[4], "0.40x")
        self.assertEqual(frame[6].strip(" |"), "<= 0.5x")
        self.assertIn("onnxruntime-node 1.30.0", text)

    def test_best_of_rounds_per_runtime_and_row(self):
        rows, text = self.run_script(
            [idem_json({"silero_v5_chunk/threads:1": 30.0, "oww_frame/threads:1": 500.0}),
             idem_json({"silero_v5_chunk/threads:1": 40.0, "oww_frame/threads:1": 450.0})],
            [{"node_tiny": 12000.0, "silero_v5_chunk/threads:1": 100000.0,
              "oww_frame/threads:1": 1000000.0},
             {"node_tiny": 10000.0, "silero_v5_chunk/threads:1": 120000.0,
              "oww_frame/threads:1": 900000.0}])
        self.assertEqual(rows["silero_v5_chunk/threads:1"][1], "30.0 us")   # round 1
        self.assertEqual(rows["silero_v5_chunk/threads:1"][2], "100.0 us")  # round 1
        self.assertEqual(rows["oww_frame/threads:1"][1], "450.0 us")        # round 2
        self.assertEqual(rows["oww_frame/threads:1"][2], "900.0 us")        # round 2
        self.assertEqual(rows["oww_frame/threads:1"][4], "0.50x")
        self.assertIn("node_tiny): 10.0 us", text)


if __name__ == "__main__":
    unittest.main()
