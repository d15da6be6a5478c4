"""Chapter 18.3, redone: every candidate checked against the oracle and against each other, bit for bit.

This is correctness, not speed: nothing here is timed, and tritune says so. The error is printed against
the tolerance, not as a number: its last digits depend on the CPU's math library.
"""

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

from gelu import gelu  # the bundled workload

import tritune

report = tritune.verify(gelu)
print(report.timing)
for entry in report.workloads:
    print(f"n={entry.key['n']}:")
    for cand in entry.candidates:
        err = cand.extra["max_abs_error"]
        within = "<=" if err is not None and err <= gelu.atol else ">"
        print(f"  {cand.config.id:38s} {cand.status.value}  max_abs_error {within} atol={gelu.atol:g}")
    print("  all correct candidates bit-for-bit identical?", entry.extra["bitwise_identical"])
print("every candidate correct?", report.ok)
