"""The read-only leaderboard server (`robusteval serve RUNS_DIR`)."""
