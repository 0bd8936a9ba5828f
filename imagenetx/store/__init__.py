"""Storage: bulk writes, the field declarations of the data contract,
and dataset lookup."""
