"""Running the notebooks of a preset into ``outputs/<run-id>/``, one module per job; imports go
down this list, never up:

* ``signals``: SIGINT and SIGTERM as ``Interrupted``;
* ``plan``: validate everything before anything is written, make the run folder; the cell timeout;
* ``job``, ``kernel``: what a notebook's part says about its job; the kernel papermill starts;
* ``notebook``: execute one notebook into the run folder;
* ``slurm``, ``jobstate``, ``jobs``, ``snakelog``, ``profile``: Slurm before submission, what its
  tools print about a job, what became of a notebook's job (asked once, kept in its part),
  Snakemake's log; the Snakemake profiles and the Slurm options they read;
* ``finalize``, ``resume``: fold the parts, judge, report; what a resume needs;
* ``stopby``: whether a notebook still fits a run's time limit (``--stop-by``), by its earlier runs;
* ``local``, ``snakemake``: the executors of ``pinpath run --executor local|snakemake|slurm``;
  ``local`` also redoes one notebook (``pinpath run-notebook``), its old outputs aside.
"""
