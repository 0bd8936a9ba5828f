"""Storage: bulk writes, the field declarations of the data contract,
dataset lookup, FiftyOne evaluation of prediction fields, and the database
service the commands share (:mod:`~imagenetx.store.service`)."""
