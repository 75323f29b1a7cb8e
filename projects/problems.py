"""Problem codes owned by projects (intake)."""

from core.problems import register

register(
    "file_type_unsupported",
    400,
    "Unsupported file type",
    "The file is not a PDF, a PNG, JPEG, WebP or TIFF image, or a zip of such images "
    "(the content is checked, not the name).",
)
register(
    "file_type_mismatch",
    400,
    "File name and content disagree",
    "The file's name says one type and its content another (for example a PDF named .png).",
)
register("file_empty", 400, "Empty file", "The file has no content.")
register("file_corrupt", 400, "Damaged file", "The file could not be read: it is damaged or truncated.")
register("pdf_encrypted", 400, "Encrypted PDF", "The PDF is password-protected; upload an unprotected copy.")
register("pdf_no_pages", 400, "PDF without pages", "The PDF has no pages.")
register("too_many_pages", 400, "Too many pages", "The book has more pages than allowed (see the limits).")
register(
    "image_too_large", 400, "Image too large", "An image has more pixels than allowed (a decompression-bomb guard)."
)
register(
    "zip_unsafe",
    400,
    "Unsafe zip",
    "The zip has an entry outside its folder (../ or an absolute path), a link, or is encrypted.",
)
register(
    "zip_too_large",
    400,
    "Zip too large",
    "The zip unpacks to more bytes or entries than allowed, or compresses suspiciously well.",
)
register(
    "zip_entry_unsupported",
    400,
    "Unsupported file in zip",
    "The zip holds a file that is not a PNG, JPEG, WebP or TIFF image.",
)
register("zip_no_images", 400, "Zip without images", "The zip holds no images.")
register("upload_key_unknown", 400, "Unknown upload key", "No upload with this key exists for you (or it expired).")
register(
    "upload_already_used",
    409,
    "Upload already used",
    "This upload is already the source of a project; upload the file again for another.",
)
register(
    "source_path_forbidden",
    403,
    "Server path not allowed",
    "A server-side sourcePath is for staff, inside a configured folder only.",
)
register(
    "source_conflict", 400, "Exactly one source", "Give exactly one of uploadKey, anonymousUploadKey and sourcePath."
)
register(
    "project_not_editable",
    409,
    "Project cannot change now",
    "This change is not possible in the project's current state.",
)
register(
    "project_not_startable",
    409,
    "Book cannot be processed now",
    "The book is not in a state that can be processed (it is still a draft to normalize, failed, or being cancelled).",
)
register(
    "project_not_cancellable",
    409,
    "Nothing to cancel",
    "The book is complete, failed, or was never started: there is no work to cancel.",
)
register(
    "job_in_flight",
    409,
    "A batch is already in flight",
    "process-next-batch runs a batch synchronously, but one is already queued or running: poll it instead.",
)
register(
    "pages_not_ready",
    409,
    "Pages still being prepared",
    "The page (or, for process-next-batch, a page of the next batch) is still being rendered from the file: "
    "ask for the page again shortly; call process, which starts a batch as soon as its pages are ready.",
)
register(
    "page_not_reviewable",
    409,
    "Page cannot be reviewed so",
    "Only a translated page can be approved, and only an approved page can be rejected.",
)
