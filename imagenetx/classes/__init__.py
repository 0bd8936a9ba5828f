"""Label spaces and class tables: the 1000 ImageNet classes, name
resolution, and what counts as a correct prediction."""
