"""Bulk writes: one update command per chunk, split when too large."""

import fiftyone as fo

from imagenetx.store.bulk import write_raw


def test_a_chunk_over_the_16_mb_command_limit_is_split_and_written():
    ds = fo.Dataset("bulk-large")
    ds.add_samples([fo.Sample(filepath=f"/x/{i}.jpg") for i in range(3000)])
    ids = ds.values("_id", _raw=True)
    ds.add_sample_field("blob", fo.ListField, subfield=fo.FloatField)
    # ~27 MB of values in one chunk: more than one command can carry
    written = write_raw(ds, [{i: {"blob": [0.5] * 1000} for i in ids}])
    assert written == 3000
    assert len(ds.exists("blob")) == 3000
    assert ds.bounds("last_modified_at")[0] > ds.bounds("created_at")[1]
    assert len(ds.first().blob) == 1000
