"""Real books for tests and benches: PDFs that Debian's documentation packages install
(documents nobody here wrote), and scans made from them.

`debian_pdf("debian-faq")` is the book's PDF, unpacked once into a cache folder;
`scan_pages(pdf, first, last)` renders pages with pdftoppm and degrades them as a scanner
does (a turn of a degree or two, blur, noise, JPEG), the same pixels on every run (seeded).
The packages are installed by the test setup (scripts/lib.sh `system_tools_ensure`).
"""

from __future__ import annotations

import gzip
import io
import random
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from PIL import Image, ImageFilter

CACHE = Path(tempfile.gettempdir()) / "bt-corpus"

# name -> (installed file, Debian package, what kind of book it is)
DEBIAN_BOOKS: dict[str, tuple[str, str, str]] = {
    "debian-faq": ("/usr/share/doc/debian/FAQ/debian-faq.en.pdf.gz", "debian-faq", "prose FAQ, 73 pages"),
    "bzip2": ("/usr/share/doc/bzip2/manual.pdf.gz", "bzip2-doc", "manual with C code, 38 pages"),
    "valgrind": ("/usr/share/doc/valgrind/valgrind_manual.pdf.gz", "valgrind", "manual with commands, 397 pages"),
    "libtasn1": ("/usr/share/doc/libtasn1-doc/libtasn1.pdf", "libtasn1-doc", "API manual, 36 pages"),
    "nettle": ("/usr/share/doc/nettle-dev/nettle.pdf.gz", "nettle-dev", "API manual, 111 pages"),
    "crc-doc": (
        "/usr/share/doc/zlib1g-dev/crc-doc.1.0.pdf.gz",
        "zlib1g-dev",
        "paper on CRC algorithms with ruled tables of timings, 29 pages",
    ),
    "shared-mime-info": (
        "/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf",
        "shared-mime-info",
        "specification with XML listings and tables, 17 pages",
    ),
}


def debian_pdf(name: str) -> Path:
    """The PDF of a book of DEBIAN_BOOKS, unpacked (gunzipped) into CACHE on first use.
    FileNotFoundError names the package to install when it is missing."""
    installed, package, _ = DEBIAN_BOOKS[name]
    source = Path(installed)
    if not source.exists():
        raise FileNotFoundError(f"{source} is missing: apt-get install {package} (scripts/lib.sh installs it)")
    target = CACHE / f"{name}.pdf"
    if not target.exists() or target.stat().st_mtime < source.stat().st_mtime:
        CACHE.mkdir(parents=True, exist_ok=True)
        partial = target.with_suffix(".part")
        with partial.open("wb") as out:
            if source.suffix == ".gz":
                with gzip.open(source, "rb") as unpacked:
                    shutil.copyfileobj(unpacked, out)
            else:
                with source.open("rb") as plain:
                    shutil.copyfileobj(plain, out)
        partial.replace(target)
    return target


def pdf_page_count(pdf: Path) -> int:
    info = subprocess.run(["pdfinfo", str(pdf)], capture_output=True, text=True, check=True).stdout
    return int(info.split("Pages:")[1].split()[0])


def pdf_window(pdf: Path, first: int, last: int, target: Path) -> Path:
    """Pages first..last (1-based) of the PDF as a PDF of their own (pdfseparate + pdfunite)."""
    with tempfile.TemporaryDirectory() as temporary:
        pattern = str(Path(temporary) / "page-%05d.pdf")
        subprocess.run(["pdfseparate", "-f", str(first), "-l", str(last), str(pdf), pattern], check=True)
        pages = sorted(str(path) for path in Path(temporary).glob("page-*.pdf"))
        subprocess.run(["pdfunite", *pages, str(target)], check=True)
    return target


def pages_render(pdf: Path, first: int, last: int, *, dpi: int = 200) -> list[Image.Image]:
    """Pages first..last rendered in grey by pdftoppm, loaded into memory."""
    with tempfile.TemporaryDirectory() as temporary:
        prefix = Path(temporary) / "page"
        subprocess.run(
            ["pdftoppm", "-f", str(first), "-l", str(last), "-r", str(dpi), "-gray", "-png", str(pdf), str(prefix)],
            check=True,
        )
        images = []
        for path in sorted(Path(temporary).glob("page-*.png")):
            with Image.open(path) as image:
                images.append(image.copy())
    return images


@dataclass(frozen=True)
class Degradation:
    """How a scan differs from the page: a turn (degrees, counter-clockwise), a Gaussian
    blur (radius in pixels), noise (0-1: how much of each pixel is uniform noise) and the
    JPEG quality it is saved at."""

    angle: float = 1.9
    blur: float = 0.7
    noise: float = 0.12
    jpeg_quality: int = 60
    seed: int = 14


def scanned(image: Image.Image, degradation: Degradation, *, page_seed: int = 0) -> Image.Image:
    """The page as a scanner gives it back; the same image and seed give the same pixels."""
    grey = image.convert("L")
    turned = grey.rotate(degradation.angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    if degradation.blur:
        turned = turned.filter(ImageFilter.GaussianBlur(degradation.blur))
    if degradation.noise:
        chooser = random.Random(degradation.seed * 100_003 + page_seed)
        speckle = Image.frombytes("L", turned.size, chooser.randbytes(turned.width * turned.height))
        turned = Image.blend(turned, speckle, degradation.noise)
    encoded = io.BytesIO()
    turned.save(encoded, format="JPEG", quality=degradation.jpeg_quality)
    encoded.seek(0)
    with Image.open(encoded) as decoded:
        return decoded.copy()


def scan_pages(
    pdf: Path, first: int, last: int, degradation: Degradation | None = None, *, dpi: int = 200
) -> list[Image.Image]:
    """Pages first..last of the PDF as degraded scans (Degradation() when none is given)."""
    chosen = degradation or Degradation()
    return [
        scanned(image, chosen, page_seed=number)
        for number, image in enumerate(pages_render(pdf, first, last, dpi=dpi), start=first)
    ]


def scans_pdf(images: list[Image.Image], *, dpi: int = 200) -> bytes:
    """The scans as an image-only PDF (no text layer), as a scanner's PDF is."""
    out = io.BytesIO()
    rgb = [image.convert("L") for image in images]
    rgb[0].save(out, format="PDF", save_all=True, append_images=rgb[1:], resolution=dpi)
    return out.getvalue()
