"""Real books for tests and benches: PDFs that Debian's documentation packages install
(documents nobody here wrote), and scans made from them.

`debian_pdf("debian-faq")` is the book's PDF, unpacked once into a cache folder;
`paper_pdf("asmejour")` one of PAPERS, multi-column sample papers of publishers' LaTeX
templates (texlive-publishers-doc; ACM's acmart samples are held back for acceptance and
never used here); `scan_pages(pdf, first, last)` renders pages with pdftoppm and degrades
them as a scanner does (a turn of a degree or two, blur, noise, JPEG), the same pixels on
every run (seeded); `scans_zip(images)` is those scans as a folder of JPEG images in a zip,
as a user uploads one, and `scans_pdf(images)` as an image-only PDF.
The packages are installed by the test setup (scripts/lib.sh `system_tools_ensure`).
"""

from __future__ import annotations

import gzip
import hashlib
import io
import random
import shutil
import subprocess
import tempfile
import zipfile
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


_PUBLISHERS = "/usr/share/doc/texlive-doc/latex"

# name -> (installed file, Debian package, the template and what the paper holds). Every one is
# set in two columns (checked on its pages: the words' x positions and the rendered page), has
# a full-width title block, and is the publisher's own sample or guide set in its template.
PAPERS: dict[str, tuple[str, str, str]] = {
    "ieee-pes": (
        f"{_PUBLISHERS}/ieeepes/ieeepes_doc.pdf",
        "texlive-publishers-doc",
        "IEEE Power Engineering Society transactions (ieeepes): contents list, footnotes, tables, 6 pages",
    ),
    "elsarticle-5p": (
        f"{_PUBLISHERS}/elsarticle/elstest-5p.pdf",
        "texlive-publishers-doc",
        "Elsevier elsarticle, 5p two-column journal layout: footnotes, display equations, figures, 4 pages",
    ),
    "els-cas-dc": (
        f"{_PUBLISHERS}/els-cas-templates/doc/dc-sample.pdf",
        "texlive-publishers-doc",
        "Elsevier CAS double-column (cas-dc): author block, title footnotes, lists, 1 page",
    ),
    "asmeconf": (
        f"{_PUBLISHERS}/asmeconf/asmeconf-template.pdf",
        "texlive-publishers-doc",
        "ASME conference paper (asmeconf): nomenclature, footnotes, equations, tables, figures, 6 pages",
    ),
    "asmejour": (
        f"{_PUBLISHERS}/asmejour/asmejour-template.pdf",
        "texlive-publishers-doc",
        "ASME journal paper (asmejour): footnotes, equations, tables, figures, references, 7 pages",
    ),
    "agu": (
        f"{_PUBLISHERS}/aguplus/aguplus.pdf",
        "texlive-publishers-doc",
        "American Geophysical Union (AGU++): footnotes, tables, listings, 10 pages",
    ),
    "jacow": (
        f"{_PUBLISHERS}/jacow/JACoW_LaTeX_A4.pdf",
        "texlive-publishers-doc",
        "JACoW accelerator conference paper, A4: footnotes, tables, figures, references, 10 pages",
    ),
    "mnras": (
        f"{_PUBLISHERS}/mnras/mnras_guide.pdf",
        "texlive-publishers-doc",
        "Oxford University Press, Monthly Notices of the RAS: footnotes, equations, tables, 10 pages",
    ),
    "nrc": (
        f"{_PUBLISHERS}/nrc/userguide.pdf",
        "texlive-publishers-doc",
        "NRC Research Press (Canadian Science Publishing): footnotes, tables, listings, 18 pages",
    ),
    "oup": (
        f"{_PUBLISHERS}/oup-authoring-template/oup-authoring-template.pdf",
        "texlive-publishers-doc",
        "Oxford University Press authoring template: footnotes, equations, theorems, tables, figures, 9 pages",
    ),
    "quantum": (
        f"{_PUBLISHERS}/quantumarticle/quantum-template.pdf",
        "texlive-publishers-doc",
        "Quantum journal (quantumarticle, two-column): equations, theorems, figures, 5 pages",
    ),
    "revtex-aip": (
        f"{_PUBLISHERS}/revtex4-1/sample/aip/aipsamp.pdf",
        "texlive-publishers-doc",
        "AIP Publishing (REVTeX 4.1, two-column): title footnotes, equations, tables, figures, 6 pages",
    ),
    "revtex-aps": (
        f"{_PUBLISHERS}/revtex/sample/aps/apssamp.pdf",
        "texlive-publishers-doc",
        "American Physical Society (REVTeX 4.2): footnotes, equations, tables, figures, 7 pages",
    ),
    "springer-iag": (
        f"{_PUBLISHERS}/prociagssymp/TestprocIAGssymp.pdf",
        "texlive-publishers-doc",
        "Springer, IAG Symposia proceedings (procIAGssymp): sections, references, 2 pages",
    ),
    "imac": (
        f"{_PUBLISHERS}/imac/imac.pdf",
        "texlive-publishers-doc",
        "SEM International Modal Analysis Conference (IMAC): nomenclature, tables, figures, 3 pages",
    ),
    "revtex-aapm": (
        f"{_PUBLISHERS}/revtex/sample/aapm/aapmsamp.pdf",
        "texlive-publishers-doc",
        "AAPM, Medical Physics (REVTeX 4.2): footnotes, equations, wide tables, figures, 6 pages",
    ),
    "tugboat": (
        f"{_PUBLISHERS}/tugboat/ltubguid.pdf",
        "texlive-publishers-doc",
        "TeX Users Group, TUGboat journal: listings, footnotes, 7 pages",
    ),
    "elbioimp": (
        f"{_PUBLISHERS}/elbioimp/elbioimp.pdf",
        "texlive-publishers-doc",
        "Journal of Electrical Bioimpedance (elbioimp): listings, tables, footnotes, 5 pages",
    ),
}


def _unpacked(name: str, installed: str, package: str) -> Path:
    source = Path(installed)
    if not source.exists():
        raise FileNotFoundError(f"{source} is missing: apt-get install {package} (scripts/lib.sh installs it)")
    # The installed path in the name: a registry entry moved to another file is a new copy.
    target = CACHE / f"{name}-{hashlib.sha256(installed.encode()).hexdigest()[:8]}.pdf"
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


def debian_pdf(name: str) -> Path:
    """The PDF of a book of DEBIAN_BOOKS, unpacked (gunzipped) into CACHE on first use.
    FileNotFoundError names the package to install when it is missing."""
    installed, package, _ = DEBIAN_BOOKS[name]
    return _unpacked(name, installed, package)


def paper_pdf(name: str) -> Path:
    """The PDF of a paper of PAPERS, copied (gunzipped where packed) into CACHE on first use.
    FileNotFoundError names the package to install when it is missing."""
    installed, package, _ = PAPERS[name]
    return _unpacked(f"paper-{name}", installed, package)


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


def scanned_jpeg(image: Image.Image, degradation: Degradation, *, page_seed: int = 0, dpi: int | None = None) -> bytes:
    """The page as a scanner saves it: JPEG bytes (with `dpi` as its resolution when given);
    the same image and seed give the same bytes."""
    grey = image.convert("L")
    turned = grey.rotate(degradation.angle, resample=Image.Resampling.BICUBIC, expand=True, fillcolor=255)
    if degradation.blur:
        turned = turned.filter(ImageFilter.GaussianBlur(degradation.blur))
    if degradation.noise:
        chooser = random.Random(degradation.seed * 100_003 + page_seed)
        speckle = Image.frombytes("L", turned.size, chooser.randbytes(turned.width * turned.height))
        turned = Image.blend(turned, speckle, degradation.noise)
    encoded = io.BytesIO()
    resolution = {"dpi": (dpi, dpi)} if dpi else {}
    turned.save(encoded, format="JPEG", quality=degradation.jpeg_quality, **resolution)
    return encoded.getvalue()


def scanned(image: Image.Image, degradation: Degradation, *, page_seed: int = 0) -> Image.Image:
    """The page as a scanner gives it back; the same image and seed give the same pixels."""
    with Image.open(io.BytesIO(scanned_jpeg(image, degradation, page_seed=page_seed))) as decoded:
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


# How the corpus's scans are scanned: resolution (dpi) and degradation, from a careful
# flatbed to a phone held over the page; turned both ways, up to 2 degrees.
SCANNERS: dict[str, tuple[int, Degradation]] = {
    "office-150": (150, Degradation(angle=-1.2, blur=0.6, noise=0.10, jpeg_quality=55, seed=21)),
    "flatbed-200": (200, Degradation(angle=1.9, blur=0.7, noise=0.12, jpeg_quality=60, seed=14)),
    "copier-250": (250, Degradation(angle=0.8, blur=0.9, noise=0.08, jpeg_quality=70, seed=33)),
    "phone-300": (300, Degradation(angle=-2.0, blur=1.1, noise=0.15, jpeg_quality=50, seed=45)),
}


def scan_jpegs(
    pdf: Path, first: int, last: int, degradation: Degradation | None = None, *, dpi: int = 200
) -> list[bytes]:
    """Pages first..last of the PDF scanned at `dpi`: one JPEG file's bytes a page, with its
    resolution recorded, as a scanner writes them into a folder."""
    chosen = degradation or Degradation()
    return [
        scanned_jpeg(image, chosen, page_seed=number, dpi=dpi)
        for number, image in enumerate(pages_render(pdf, first, last, dpi=dpi), start=first)
    ]


def scans_zip(jpegs: list[bytes], *, folder: str = "scans", first: int = 1) -> bytes:
    """The scanned pages as a user uploads a folder of images: a zip of `folder/page-N.jpg`
    (N from `first`, not zero-padded: the service orders them naturally)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as archive:
        for number, jpeg in enumerate(jpegs, start=first):
            archive.writestr(f"{folder}/page-{number}.jpg", jpeg)
    return out.getvalue()


def scans_pdf(images: list[Image.Image], *, dpi: int = 200) -> bytes:
    """The scans as an image-only PDF (no text layer), as a scanner's PDF is."""
    out = io.BytesIO()
    rgb = [image.convert("L") for image in images]
    rgb[0].save(out, format="PDF", save_all=True, append_images=rgb[1:], resolution=dpi)
    return out.getvalue()
