"""Projects: uploads and anonymous estimates, projects (books) and their pages, normalize
(a source file becomes ordered pages), retention; later the jobs, the batch ladder and the
status view."""
