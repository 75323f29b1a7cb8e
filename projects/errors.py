"""The problem codes projects owns: what intake refuses in a file, the source of a
project, and the states a book or page must be in for a change, a batch or a review."""

from __future__ import annotations

from core.errors import RequestTooLarge, ServiceError

# --- Intake: the uploaded file ----------------------------------------------------------------


class FileTypeUnsupported(ServiceError):
    code = "file_type_unsupported"
    status = 400
    title = "Unsupported file type"
    description = (
        "The file is not a PDF, a PNG, JPEG, WebP or TIFF image, or a zip of such images "
        "(the content is checked, not the name)."
    )


class FileTypeMismatch(ServiceError):
    code = "file_type_mismatch"
    status = 400
    title = "File name and content disagree"
    description = "The file's name says one type and its content another (for example a PDF named .png)."


class FileEmpty(ServiceError):
    code = "file_empty"
    status = 400
    title = "Empty file"
    description = "The file has no content."


class FileCorrupt(ServiceError):
    code = "file_corrupt"
    status = 400
    title = "Damaged file"
    description = "The file could not be read: it is damaged or truncated."


class PdfEncrypted(ServiceError):
    code = "pdf_encrypted"
    status = 400
    title = "Encrypted PDF"
    description = "The PDF is password-protected; upload an unprotected copy."


class PdfNoPages(ServiceError):
    code = "pdf_no_pages"
    status = 400
    title = "PDF without pages"
    description = "The PDF has no pages."


class TooManyPages(ServiceError):
    code = "too_many_pages"
    status = 400
    title = "Too many pages"
    description = "The book has more pages than allowed (see the limits)."


class ImageOverPixelLimit(ServiceError):
    code = "image_too_large"
    status = 400
    title = "Image too large"
    description = "An image has more pixels than allowed (a decompression-bomb guard)."


class ZipUnsafe(ServiceError):
    code = "zip_unsafe"
    status = 400
    title = "Unsafe zip"
    description = "The zip has an entry outside its folder (../ or an absolute path), a link, or is encrypted."


class ZipTooLarge(ServiceError):
    code = "zip_too_large"
    status = 400
    title = "Zip too large"
    description = "The zip unpacks to more bytes or entries than allowed, or compresses suspiciously well."


class ZipEntryUnsupported(ServiceError):
    code = "zip_entry_unsupported"
    status = 400
    title = "Unsupported file in zip"
    description = "The zip holds a file that is not a PNG, JPEG, WebP or TIFF image."


class ZipNoImages(ServiceError):
    code = "zip_no_images"
    status = 400
    title = "Zip without images"
    description = "The zip holds no images."


class UploadTooLarge(RequestTooLarge):
    """An uploaded file over UPLOAD_MAX_BYTES (core's request_too_large)."""


# --- A project's source -----------------------------------------------------------------------


class UploadKeyUnknown(ServiceError):
    code = "upload_key_unknown"
    status = 400
    title = "Unknown upload key"
    description = "No upload with this key exists for you (or it expired)."


class UploadAlreadyUsed(ServiceError):
    code = "upload_already_used"
    status = 409
    title = "Upload already used"
    description = "This upload is already the source of a project; upload the file again for another."


class SourcePathForbidden(ServiceError):
    code = "source_path_forbidden"
    status = 403
    title = "Server path not allowed"
    description = "A server-side sourcePath is for staff, inside a configured folder only."


class SourceConflict(ServiceError):
    code = "source_conflict"
    status = 400
    title = "Exactly one source"
    description = "Give exactly one of uploadKey, anonymousUploadKey and sourcePath."


# --- The book's and the page's state ----------------------------------------------------------


class ProjectNotEditable(ServiceError):
    code = "project_not_editable"
    status = 409
    title = "Project cannot change now"
    description = "This change is not possible in the project's current state."


class ProjectNotStartable(ServiceError):
    code = "project_not_startable"
    status = 409
    title = "Book cannot be processed now"
    description = (
        "The book is not in a state that can be processed (it is still a draft to normalize, failed, or being "
        "cancelled)."
    )


class ProjectNotCancellable(ServiceError):
    code = "project_not_cancellable"
    status = 409
    title = "Nothing to cancel"
    description = "The book is complete, failed, or was never started: there is no work to cancel."


class JobInFlight(ServiceError):
    code = "job_in_flight"
    status = 409
    title = "A batch is already in flight"
    description = (
        "process-next-batch runs a batch synchronously, but one is already queued or running: poll it instead."
    )


class PagesNotReady(ServiceError):
    code = "pages_not_ready"
    status = 409
    title = "Pages still being prepared"
    description = (
        "The page (or, for process-next-batch, a page of the next batch) is still being rendered from the file: "
        "ask for the page again shortly; call process, which starts a batch as soon as its pages are ready."
    )


class PageNotReviewable(ServiceError):
    code = "page_not_reviewable"
    status = 409
    title = "Page cannot be reviewed so"
    description = "Only a translated page can be approved, and only an approved page can be rejected."
