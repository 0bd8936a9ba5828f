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


def test_an_update_the_plain_operators_cannot_apply_is_written_as_a_pipeline():
    """A path below a null and a key that starts with ``$`` are refused by
    ``$set``; those samples are written as before, by an update pipeline."""
    ds = fo.Dataset("bulk-fallback")
    ds.add_samples([fo.Sample(filepath=f"/x/{i}.jpg") for i in range(3)])
    ds.add_sample_field("gt", fo.EmbeddedDocumentField, embedded_doc_type=fo.Classification)
    ds.add_sample_field("gt.class_index", fo.IntField)
    ds.set_values("gt", [fo.Classification(label="a"), None, None])
    ids = ds.values("_id", _raw=True)
    written = write_raw(ds, [{ids[0]: {"gt.class_index": 1}, ids[1]: {"gt.class_index": 2},
                              ids[2]: {"blob": {"$key": 1}}}])
    assert written == 3
    docs = {d["_id"]: d for d in ds._sample_collection.find()}
    assert docs[ids[0]]["gt"]["label"] == "a" and docs[ids[0]]["gt"]["class_index"] == 1
    assert docs[ids[1]]["gt"] == {"class_index": 2}
    assert docs[ids[2]]["blob"] == {"$key": 1}
    assert len({d["last_modified_at"] for d in docs.values()}) == 1  # one clean stamp
    ds.delete()
