"""Records and the files that hold them: the record schema (one value every writer and reader derives from),
JSONL and Parquet I/O, instruction configs and generation."""

from bootcamp_core.data.schema import RECORD_SCHEMA, Field, RecordSchema

RecordField = Field

__all__ = ["RECORD_SCHEMA", "Field", "RecordField", "RecordSchema"]
