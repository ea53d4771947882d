"""What a run writes and how it is read back: the run folder (`folder`), the typed records of
results.json (`records`), and the one JSON encoder/decoder every record goes through (`codec`)."""

from robusteval.results.codec import decode, encode
from robusteval.results.folder import RESERVED_MARK, RunFolder, default_run_id, reserve_run_folder, versions, write_run

__all__ = ["RESERVED_MARK", "RunFolder", "decode", "default_run_id", "encode", "reserve_run_folder", "versions",
           "write_run"]
