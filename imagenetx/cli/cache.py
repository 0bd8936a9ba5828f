"""``cache``: the images Hub pulls left on disk, and removing those no
dataset uses."""

# lazy imports: start-up (the parser is built, and --help shown, without FiftyOne, torch or scipy)

from imagenetx.cli.base import CommandGroup, print_result
from imagenetx.disk import format_size

TITLE = "downloads"


def register(group: CommandGroup) -> None:
    """Adds this module's commands."""
    p = group.add("cache", run_cache, "Hub pulls on disk (one folder per endpoint, repo and "
                                      "commit): list them with the datasets that use them, "
                                      "or clear those no dataset uses")
    p.add_argument("action", choices=["list", "clear"])
    p.add_argument("--keep-shards", action="store_true",
                   help="clear: keep the shards the pulls read in the huggingface_hub cache")
    p.add_argument("--force", action="store_true",
                   help="clear: also remove pulls whose use cannot be known from here "
                        "(images given to a dataset on another database server)")
    p.add_argument("--json", action="store_true", help="list: print JSON")


def _line(pull) -> str:
    use = ("used by " + ", ".join(pull.used_by) if pull.used_by else
           "a pull is writing it" if pull.pulling else
           "may be used by " + "; ".join(pull.unseen) if pull.unseen else
           "no dataset uses it")
    return (f"{pull.repo_id} @ {pull.revision[:12]} ({pull.endpoint}): "
            f"{'/'.join(pull.splits) or 'no split'}, {pull.images:,} images, "
            f"{format_size(pull.size)}; {use}\n  {pull.folder}")


def run_cache(args) -> int:
    from imagenetx.benchmarks.imagenet_x import pull_cache

    if args.action == "list":
        pulls = pull_cache.cached_pulls()

        def text(result):
            if not pulls:
                return "No Hub pull on disk"
            unused = [p for p in pulls if p.unused]
            return "\n".join([_line(p) for p in pulls] + [
                f"{len(pulls)} pulls, {format_size(sum(p.size for p in pulls))}; "
                f"{len(unused)} no dataset uses ({format_size(sum(p.size for p in unused))}): "
                "`imagenetx cache clear` removes them"])

        return print_result(args, {"pulls": [p.to_dict() for p in pulls]}, text)
    done = pull_cache.clear_pulls(keep_shards=args.keep_shards, force=args.force)
    for pull in done.removed:
        print(f"removed {_line(pull)}")
    for pull in done.kept_unseen:
        print(f"kept {_line(pull)}")
    print(f"{len(done.removed)} pulls no dataset used removed, "
          f"{format_size(sum(p.size for p in done.removed))} freed"
          + ("" if args.keep_shards or not done.removed
             else f" (and {format_size(done.shards_freed)} of the shards they read in the "
                  "huggingface_hub cache)"))
    if done.kept_unseen:
        print(f"{len(done.kept_unseen)} pulls kept: their use cannot be known from this "
              "database server; run `imagenetx cache list` where their datasets are, or pass "
              "--force to remove them")
    return 0
