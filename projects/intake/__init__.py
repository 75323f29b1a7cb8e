"""Intake: reading an uploaded source (PDF, image, zip or folder of images) without trusting it.

`sniffing` decides what a file is and refuses what we do not accept; `word_estimate`
estimates the words of a book without a text layer; `rendering` turns a checked source
into page images, their text layers and (`layout`) their layouts; `poppler` is the one
place poppler's tools are run and their output parsed. Nothing here writes to the
database: the services of projects call in.
"""
