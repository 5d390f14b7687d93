"""The 15 claims of the thread as declarative data, and one verdict function.

Each claim names its subject (the runtime it speaks of: HSA/ROCT, HIP, the CUDA runtime/driver,
LLVM's AMDGPU or CUDA plugin, or any runtime), the data sets it reads (written once, in the
registry of notebooks: ``registry.claim_datasets``) and one or more tests. A claim is read *as
meant* where the platform measured is its subject, as an *analogue* where the platform only has
the same question (the row names the analogue), and is *not applicable* elsewhere, with its
reason. Claims about a plugin's call pattern are judged only from what the real runtime did
(``real`` tests); a model of the plugin shows its own call pattern by construction and is given
for information only.

A test is a metric with a unit, a comparison and a threshold, measured per group (size,
direction ...) with a 95 % interval taken over the independent repeats (``stats``). A test holds
when every group's interval lies on the claim's side of the threshold (or a majority, where the
test says so), does not hold when one lies entirely on the other side, and is inconclusive
otherwise; with fewer than ``stats.MIN_REPEATS`` repeats it is at best inconclusive. A test whose
situation never arose in the run is not applicable, saying so. A claim holds when all its tests
hold. Each row's ``why`` is one sentence written from the data (what was measured, on what, and
what decided); the interval rule that decided is in ``rule_detail``. The thread's figures are
quoted from it; measured ones come from the run's data files, never typed in.

The package, one job a module: ``model`` (what a claim and a test are), ``catalogue`` (the claims as
data), ``measures`` (each test's measure), ``verdict`` (an interval's and a claim's verdict),
``load`` (reading a run) and ``judge`` (the rows); this module exports what the rest of pinpath uses.
"""

from .catalogue import CLAIMS, READINGS
from .judge import evaluate, judge, judge_notebook, rules_markdown
from .load import judged_rows, load_run
from .model import ANALOGUE, AS_MEANT, COLUMNS, GPU, MODEL_ONLY, SUBJECTS, Claim, Missing, Result, Test
from .verdict import fmt_value, rule_text, verdict_of

__all__ = ["Claim", "Test", "Result", "CLAIMS", "GPU", "SUBJECTS", "AS_MEANT", "ANALOGUE", "MODEL_ONLY", "evaluate",
           "judge", "judge_notebook", "load_run", "verdict_of", "judged_rows", "READINGS", "Missing", "fmt_value", "rule_text", "rules_markdown",
           "COLUMNS"]
