"""The `booktranslate` command: a book translated from the terminal, with a progress bar,
and the reads and keys an integrator needs beside it.

    booktranslate translate book.pdf --to es --format epub,pdf [--out DIR]
    booktranslate resume PROJECT_ID [--format epub,pdf] [--out DIR]
    booktranslate estimate book.pdf
    booktranslate status PROJECT_ID
    booktranslate download PROJECT_ID [--format epub,pdf] [--out DIR]
    booktranslate wallet
    booktranslate keys list | keys create NAME [--scope S]... [--expires-in-days N] | keys revoke ID

The address and credential: `--url`/`--api-key`, else `BOOKTRANSLATE_URL`/`BOOKTRANSLATE_API_KEY`,
else the config file (`booktranslate.config`). Exit codes are the EXIT_* constants below.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from booktranslate import models, problems
from booktranslate._version import __version__
from booktranslate.book import MEDIA_TYPES, BookProgress, BookResult
from booktranslate.client import Client
from booktranslate.config import config_path, settings_load
from booktranslate.errors import BookTranslateError, ServiceUnreachable, TranslationStopped

EXIT_OK = 0
EXIT_ERROR = 1  # any other refusal of the service
EXIT_USAGE = 2  # a wrong command line or config file (argparse's own code)
EXIT_AUTH = 3  # no credential, or one refused (401) or lacking a scope (403)
EXIT_CREDIT = 4  # the wallet cannot pay the next batch (402), or the spending ceiling is reached
EXIT_FAILED_PAGES = 5  # the book ended with failed pages (files written), or failed or was cancelled
EXIT_NETWORK = 6  # the service could not be reached
EXIT_INTERRUPTED = 130  # Ctrl-C; `booktranslate resume PROJECT_ID` goes on

FORMATS = {name.lower(): name for name in ("All", "Markdown", "PlainText", "Html", "Epub", "Docx", "Pdf", "Archive")}
FORMATS.update({"md": "Markdown", "txt": "PlainText", "text": "PlainText"})
CREDIT_PROBLEMS = (problems.InsufficientCredit, problems.SpendingCeilingReached)
BAR_WIDTH = 24


def formats_parse(text: str) -> list[str]:
    """`epub,pdf` -> ["Epub", "Pdf"]; an unknown name is an argparse error."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in FORMATS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"formats are a comma-separated list of {', '.join(sorted(FORMATS))}")
    return [FORMATS[name] for name in names]


def parser_build() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="booktranslate",
        description="Translate books with the Book translation service.",
        epilog=f"Config file: {config_path()}. Exit codes: 0 ok, 1 refused, 2 usage, 3 credential, "
        "4 credit, 5 failed pages, 6 network, 130 interrupted.",
    )
    parser.add_argument("--url", help="the service's address (else BOOKTRANSLATE_URL, the config file, or local)")
    parser.add_argument("--api-key", help="an API key or JWT (else BOOKTRANSLATE_API_KEY or the config file)")
    parser.add_argument("--version", action="version", version=f"booktranslate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    translate = commands.add_parser("translate", help="translate a book file and download the result")
    translate.add_argument("file", type=Path)
    translate.add_argument("--to", required=True, metavar="LANG", help="target language code (es, fr, de, ...)")
    translate.add_argument("--name", help="the project's name (default: the file's)")
    _journey_arguments(translate)

    resume = commands.add_parser("resume", help="pick up a book where it stands and download the result")
    resume.add_argument("project_id")
    _journey_arguments(resume)

    estimate = commands.add_parser("estimate", help="pages, words and price of a book file (no account needed)")
    estimate.add_argument("file", type=Path)

    status = commands.add_parser("status", help="where a book stands")
    status.add_argument("project_id")
    status.add_argument("--json", action="store_true", help="print the status view as JSON")

    download = commands.add_parser("download", help="export a translated book and download the files")
    download.add_argument("project_id")
    download.add_argument("--format", type=formats_parse, default=["Epub", "Pdf"], metavar="LIST")
    download.add_argument("--out", type=Path, default=Path("."), metavar="DIR")

    wallet = commands.add_parser("wallet", help="the wallet's balance")
    wallet.add_argument("--json", action="store_true", help="print the wallet view as JSON")

    keys = commands.add_parser("keys", help="list, create or revoke API keys")
    key_commands = keys.add_subparsers(dest="keys_command", required=True, metavar="ACTION")
    key_commands.add_parser("list", help="the account's keys (never their secrets)")
    create = key_commands.add_parser("create", help="a new key; its secret is shown once")
    create.add_argument("name")
    create.add_argument("--scope", action="append", choices=["projects:write", "projects:read", "approve"])
    create.add_argument("--expires-in-days", type=int)
    revoke = key_commands.add_parser("revoke", help="revoke a key at once")
    revoke.add_argument("key_id")
    return parser


def _journey_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format", type=formats_parse, default=["Epub", "Pdf"], metavar="LIST", help="e.g. epub,pdf (default)"
    )
    parser.add_argument("--out", type=Path, default=Path("."), metavar="DIR", help="where the files go (default: .)")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


class ProgressBar:
    """Draws BookProgress on a terminal (one redrawn line), or elsewhere one line for each
    change of what it shows."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.live = stream.isatty()
        self.quiet = False
        self.drawn = False
        self.last_line = ""
        self.project_id: str | None = None

    def __call__(self, progress: BookProgress) -> None:
        self.project_id = progress.project_id or self.project_id
        line = self.line(progress)
        if self.quiet or line == self.last_line:
            return
        self.last_line = line
        if self.live:
            self.stream.write("\r\033[K" + line)
            self.drawn = True
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def finish(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.drawn = False

    @staticmethod
    def line(progress: BookProgress) -> str:
        if progress.project_id is None:
            return f"{progress.step}: {progress.detail}"
        if progress.step in ("normalize", "process"):
            return f"{progress.step}: project {progress.project_id}"
        total = progress.total_pages
        filled = BAR_WIDTH * progress.translated_pages // total if total else 0
        bar = "#" * filled + "-" * (BAR_WIDTH - filled)
        if progress.state in ("Complete", "CompletedWithErrors"):
            batch = f"{progress.batch} batches"
        else:
            size = "the rest"
            if progress.batch_size:
                size = f"{progress.batch_size} page{'s' if progress.batch_size > 1 else ''}"
            batch = f"batch {progress.batch} ({size})"
        parts = [f"[{bar}] {progress.translated_pages}/{total} pages", batch, f"${progress.cost_usd:.4f}"]
        parts.append(progress.state or "")
        if progress.failed_pages:
            parts.append(f"{progress.failed_pages} failed")
        if progress.step in ("export", "download"):
            parts.append(f"{progress.step} {progress.detail}")
        return "  ".join(part for part in parts if part)


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one command; returns (and, as the console script, exits with) its exit code."""
    parser = parser_build()
    args = parser.parse_args(argv)
    try:
        settings = settings_load(url=args.url, api_key=args.api_key)
    except ValueError as error:
        parser.error(str(error))
    out, err = sys.stdout, sys.stderr
    bar = ProgressBar(err)
    try:
        with Client(settings.url, api_key=settings.api_key) as client:
            return COMMANDS[args.command](client, args, out, bar)
    except KeyboardInterrupt:
        bar.finish()
        err.write(
            f"interrupted; `booktranslate resume {bar.project_id or 'PROJECT_ID'}` picks the book up where it stands\n"
        )
        return EXIT_INTERRUPTED
    except BookTranslateError as error:
        bar.finish()
        err.write(f"booktranslate: {error}\n")
        if error.project_id and not isinstance(error, TranslationStopped):
            err.write(f"once that is settled: booktranslate resume {error.project_id}\n")
        return exit_code(error)


def exit_code(error: BookTranslateError) -> int:
    """The exit code of an error (the EXIT_* constants)."""
    if isinstance(error, ServiceUnreachable):
        return EXIT_NETWORK
    if isinstance(error, CREDIT_PROBLEMS):
        return EXIT_CREDIT
    if isinstance(error, TranslationStopped):
        return EXIT_FAILED_PAGES
    if error.status in (401, 403):
        return EXIT_AUTH
    return EXIT_ERROR


def command_translate(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    if not args.file.is_file():
        out.flush()
        sys.stderr.write(f"booktranslate: no such file: {args.file}\n")
        return EXIT_USAGE
    result = client.translate_book(
        args.file, target=args.to, formats=args.format, out_dir=args.out, name=args.name, progress=_bar(args, bar)
    )
    return _finished(result, out, bar)


def command_resume(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    result = client.resume(args.project_id, formats=args.format, out_dir=args.out, progress=_bar(args, bar))
    return _finished(result, out, bar)


def command_download(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    view = client.get_project_status(args.project_id)
    if view["state"] not in ("Complete", "CompletedWithErrors"):
        sys.stderr.write(
            f"booktranslate: the book is {view['state']}, not translated yet: "
            f"`booktranslate resume {args.project_id}` waits for it\n"
        )
        return EXIT_ERROR
    result = client.resume(args.project_id, formats=args.format, out_dir=args.out, progress=bar)
    return _finished(result, out, bar)


def command_estimate(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    with args.file.open("rb") as book:
        media_type = MEDIA_TYPES.get(args.file.suffix.lower(), "application/octet-stream")
        estimate = client.estimate_anonymously((args.file.name, book, media_type))
    cost = estimate["bookCost"]
    at_most = f", at most ${Decimal(str(cost['maxUsd'])):.2f}" if cost["maxUsd"] is not None else ""
    out.write(
        f"{estimate['fileName']}: {estimate['pageCount']} pages, about {estimate['wordEstimate']} words\n"
        f"price: about ${Decimal(str(cost['expectedUsd'])):.2f}{at_most} ({cost['currency']})\n"
    )
    return EXIT_OK


def command_status(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    view = client.get_project_status(args.project_id)
    if args.json:
        out.write(json.dumps(view, indent=2) + "\n")
        return EXIT_OK
    progress = view["progress"]
    out.write(
        f"{view['state']}: {view['title']}\n{view['detail']}\n"
        f"pages: {progress['translatedPages']}/{progress['totalPages']} translated, {progress['failedPages']} failed; "
        f"batches done: {progress['rung']}\n"
    )
    if view["nextAction"]:
        out.write(f"next: {view['nextAction']}\n")
    return EXIT_OK


def command_wallet(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    wallet = client.get_wallet()
    if args.json:
        out.write(json.dumps(wallet, indent=2) + "\n")
    elif wallet["unlimited"]:
        out.write("unlimited (work is included)\n")
    else:
        out.write(
            f"balance:   ${Decimal(str(wallet['balanceUsd'])):.2f}\n"
            f"spendable: ${Decimal(str(wallet['spendableUsd'])):.2f}\n"
            f"reserved:  ${Decimal(str(wallet['reservedUsd'])):.2f}\n"
        )
        if wallet["lowBalance"]:
            out.write("the balance is low\n")
    return EXIT_OK


def command_keys(client: Client, args: argparse.Namespace, out: TextIO, bar: ProgressBar) -> int:
    if args.keys_command == "create":
        body: models.ApiKeyCreateInputRequest = {"name": args.name}
        if args.scope:
            body["scopes"] = args.scope
        if args.expires_in_days is not None:
            body["expiresInDays"] = args.expires_in_days
        created = client.create_api_key(body)
        out.write(f"{created['id']}  {created['name']}  {','.join(created['scopes'])}\n{created['secret']}\n")
        sys.stderr.write("the secret is shown only now: keep it\n")
    elif args.keys_command == "revoke":
        client.revoke_api_key(args.key_id)
        out.write(f"revoked {args.key_id}\n")
    else:
        for key in client.list_api_keys():
            state = "active"
            if key["revokedUtc"]:
                state = "revoked"
            elif key["expiresUtc"]:
                state = f"expires {key['expiresUtc']}"
            out.write(f"{key['id']}  {key['prefix']}  {key['name']}  {','.join(key['scopes'])}  {state}\n")
    return EXIT_OK


def _bar(args: argparse.Namespace, bar: ProgressBar) -> ProgressBar:
    bar.quiet = args.quiet
    return bar


def _finished(result: BookResult, out: TextIO, bar: ProgressBar) -> int:
    bar.finish()
    for path in result.files:
        out.write(f"{path}\n")
    if result.failed_pages:
        sys.stderr.write(
            f"{result.failed_pages} of the book's pages could not be translated "
            f"(booktranslate status {result.project_id})\n"
        )
        return EXIT_FAILED_PAGES
    return EXIT_OK


COMMANDS: dict[str, Callable[[Client, argparse.Namespace, TextIO, ProgressBar], int]] = {
    "translate": command_translate,
    "resume": command_resume,
    "estimate": command_estimate,
    "status": command_status,
    "download": command_download,
    "wallet": command_wallet,
    "keys": command_keys,
}


def console() -> None:
    sys.exit(main())
