"""Accuracy of the word estimate for books without a text layer (scans and screenshots).

Real books: the PDF manuals Debian's doc packages install (bzip2-doc, libtasn1-doc,
nettle-dev, valgrind; those present are used). From two windows of 20 pages of each, the
front (cover, contents, first pages) and the back (last pages, index), where page lengths
vary most, the bench makes
- `scan`: grey at 150 dpi, turned 1.5 degrees, blurred, with noise, JPEG quality 60, zipped;
- `scan 300 dpi`: grey at 300 dpi, turned -0.8 degrees, JPEG quality 75, zipped;
- `screenshots`: colour PNGs at 110 dpi (a page on a screen), zipped;
- `scanned PDF`: the `scan` images as an image-only PDF;
and compares the estimate intake makes (`source_inspect` + `source_words_estimate`, the
upload's own code) with the words pdftotext reads from the same 20 pages. Each result's
figure is the estimate, its baseline the real count: the ratio must stay within 0.8-1.2.
It also prints, for each case, what the estimate would be from the ink alone (WORDS_PER_INK,
the fallback without Tesseract) and from the mean of the sample pages times the page count
(the estimator before the ink).
"""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tempfile
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path

from django.test import override_settings
from PIL import Image, ImageFilter

from bench.common import Result, quick
from projects.intake.sniffing import source_inspect, source_words_estimate
from projects.intake.word_estimate import WordEstimate, words_count

BOOKS = {
    "bzip2 manual": "/usr/share/doc/bzip2/manual.pdf.gz",
    "libtasn1 manual": "/usr/share/doc/libtasn1-doc/libtasn1.pdf",
    "nettle manual": "/usr/share/doc/nettle-dev/nettle.pdf.gz",
    "valgrind manual": "/usr/share/doc/valgrind/valgrind_manual.pdf.gz",
}
PAGES = 20


def books(folder: Path) -> Iterator[tuple[str, Path]]:
    for name, source in BOOKS.items():
        path = Path(source)
        if not path.exists():
            continue
        target = folder / (name.replace(" ", "-") + ".pdf")
        target.write_bytes(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes())
        yield name, target


def page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(info.split("Pages:")[1].split()[0])


def windows(pdf: Path) -> dict[str, tuple[int, int]]:
    """1-based first and last pages of the front and back windows."""
    pages = page_count(pdf)
    return {"front": (1, min(PAGES, pages)), "back": (max(1, pages - PAGES + 1), pages)}


def pages_render(pdf: Path, folder: Path, pages: tuple[int, int], *, dpi: int, colour: bool) -> list[Image.Image]:
    first, last = pages
    prefix = folder / f"{pdf.stem}-{first}-{dpi}-{colour}"
    mode = [] if colour else ["-gray"]
    subprocess.run(
        ["pdftoppm", "-f", str(first), "-l", str(last), "-r", str(dpi), *mode, "-png", str(pdf), str(prefix)],
        check=True,
    )
    return [Image.open(path) for path in sorted(folder.glob(f"{prefix.name}-*.png"))]


def scanned(image: Image.Image, *, angle: float, blur: float, noise: int) -> Image.Image:
    turned = image.convert("L").rotate(angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    if blur:
        turned = turned.filter(ImageFilter.GaussianBlur(blur))
    if noise:
        speckle = Image.effect_noise(turned.size, noise)
        turned = Image.blend(turned, speckle, 0.15)
    return turned


def zipped(images: list[Image.Image], *, fmt: str, quality: int = 90) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as archive:
        for number, image in enumerate(images, start=1):
            page = io.BytesIO()
            image.save(page, format=fmt, quality=quality)
            archive.writestr(f"page-{number:03}.{fmt.lower().replace('jpeg', 'jpg')}", page.getvalue())
    return buffer.getvalue()


def real_words(pdf: Path, pages: tuple[int, int]) -> int:
    first, last = pages
    text = subprocess.run(
        ["pdftotext", "-f", str(first), "-l", str(last), "-enc", "UTF-8", str(pdf), "-"],
        capture_output=True,
        check=True,
    ).stdout.decode("utf-8", errors="replace")
    return words_count(text)


def estimate(data: bytes, name: str, folder: Path) -> tuple[WordEstimate, float]:
    path = folder / name
    path.write_bytes(data)
    started = time.perf_counter()
    inspection = source_inspect(path=path, file_name=name)
    words = source_words_estimate(path=path, inspection=inspection)
    return words, time.perf_counter() - started


def variants(pdf: Path, folder: Path, pages: tuple[int, int]) -> dict[str, tuple[bytes, str]]:
    scans = [
        scanned(page, angle=1.5, blur=0.8, noise=40) for page in pages_render(pdf, folder, pages, dpi=150, colour=False)
    ]
    at300 = [
        scanned(page, angle=-0.8, blur=0, noise=0) for page in pages_render(pdf, folder, pages, dpi=300, colour=False)
    ]
    screens = [page.convert("RGB") for page in pages_render(pdf, folder, pages, dpi=110, colour=True)]
    scanned_pdf = io.BytesIO()
    scans[0].save(scanned_pdf, format="PDF", save_all=True, append_images=scans[1:], resolution=150)
    return {
        "scan": (zipped(scans, fmt="JPEG", quality=60), "scan.zip"),
        "scan 300 dpi": (zipped(at300, fmt="JPEG", quality=75), "scan300.zip"),
        "screenshots": (zipped(screens, fmt="PNG"), "screens.zip"),
        "scanned PDF": (scanned_pdf.getvalue(), "scanned.pdf"),
    }


def ink_only(data: bytes, name: str, folder: Path) -> int:
    """The estimate without Tesseract: the ink at WORDS_PER_INK."""
    with override_settings(TESSERACT_COMMAND="/nonexistent/tesseract"):
        return estimate(data, name, folder)[0].words


def samples_only(data: bytes, name: str, folder: Path) -> int:
    """The estimator before the ink: the sample pages' mean words x the page count (the ink of
    the sample pages alone weighs them equally)."""
    with override_settings(WORD_ESTIMATE_INK_PAGES=0):
        return estimate(data, name, folder)[0].words


def run() -> list[Result]:
    if shutil.which("pdftoppm") is None or shutil.which("tesseract") is None:
        return []
    results: list[Result] = []
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        found = list(books(folder))
        for name, pdf in found[:2] if quick() else found:
            for window, pages in windows(pdf).items():
                real = real_words(pdf, pages)
                for variant, (data, file_name) in variants(pdf, folder, pages).items():
                    words, seconds = estimate(data, file_name, folder)
                    alone = ink_only(data, file_name, folder)
                    mean = samples_only(data, file_name, folder)
                    print(
                        f"{name}, pages {pages[0]}-{pages[1]}, {variant}: {words.words} estimated, {real} real "
                        f"({words.words / real:.3f}; ink alone {alone / real:.3f}, mean of the samples "
                        f"{mean / real:.3f}), {words.sampled_pages} pages read, ink of {words.ink_pages}, "
                        f"{seconds:.1f} s"
                    )
                    results.append(
                        Result(f"word estimate, {name}, {window} {variant} (est./real)", words.words, real, "wd")
                    )
    return results
