"""The parsers of the text-illustration commands (bodies in `commands`, imported only when one runs,
so `annobench --help` stays fast)."""

from __future__ import annotations

import argparse

from annobench.core.arguments import non_negative_int

DEFAULT_SEED = 0  # baselines.DEFAULT_SEED, not imported: it would load scipy for every command


def _illustration(args: argparse.Namespace) -> int:
    from annobench.benchmark.illustration.commands import illustration_main

    return illustration_main(args.pages, args.out, args.mapping, args.text_terms, args.seed)


def _evaluate(args: argparse.Namespace) -> int:
    from annobench.benchmark.illustration.commands import evaluate_illustration_main

    return evaluate_illustration_main(args.truth, args.run, args.json, args.candidates)


def _check(args: argparse.Namespace) -> int:
    from annobench.benchmark.illustration.commands import check_illustration_run_main

    return check_illustration_run_main(args.run, args.truth, args.candidates, queries_path=args.queries)


def add_commands(commands: argparse._SubParsersAction) -> None:
    making = commands.add_parser(
        "illustration", help="text illustration (the ImageCLEF 2016 teaser): query documents from saved pages, "
                             "their truth, and the random and tf-idf baseline runs with their R@k")
    making.add_argument("--pages", required=True, help="folder of saved pages with their images")
    making.add_argument("--mapping", default=None,
                        help="CSV image_id,page_id,img_src (default: derived from the folder, as pages-map does)")
    making.add_argument("--text-terms", default=None,
                        help="a text_terms table (Parquet file or folder) to use as the images' text (default: "
                             "computed from the pages)")
    making.add_argument("--seed", type=non_negative_int, default=DEFAULT_SEED, help="seed of the random baseline")
    making.add_argument("--out", required=True, help="folder to write tables/queries/all.parquet, truth.csv, the runs and their "
                                                     "evaluations in")
    making.set_defaults(handler=_illustration)

    scoring = commands.add_parser(
        "evaluate-illustration", help="score a text-illustration ranking run: R@k, k = 1 ... 100, and chance")
    scoring.add_argument("--truth", required=True, help="CSV query_id,image_id, one line per query")
    scoring.add_argument("--run", required=True, help="CSV query_id,rank,image_id (at most 100 ranks per query)")
    scoring.add_argument("--candidates", default=None,
                         help="the candidate images: one id a line, or a CSV with an image_id column (default: "
                              "every image of the truth)")
    scoring.add_argument("--json", required=True, help="where to write R@k and chance")
    scoring.set_defaults(handler=_evaluate)

    checking = commands.add_parser(
        "check-illustration-run", help="validate a text-illustration ranking run (exit 2 and one line per problem)")
    checking.add_argument("--truth", default=None, help="CSV query_id,image_id: other query ids are errors")
    checking.add_argument("--queries", default=None,
                          help="the query ids without their images (a participant's kit): one id a line, or a CSV "
                               "with a query_id column; other query ids are errors. Not with --truth")
    checking.add_argument("--candidates", default=None,
                          help="the candidate images (default with --truth: its images): other image ids are errors")
    checking.add_argument("run", help="CSV query_id,rank,image_id")
    checking.set_defaults(handler=_check)
