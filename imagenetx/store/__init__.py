"""Storage: bulk writes, the field declarations of the data contract,
dataset lookup, and FiftyOne evaluation of prediction fields."""
