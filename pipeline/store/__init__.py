"""The resumable zarr result store: layout, shards and journal, integrity, records, export."""
