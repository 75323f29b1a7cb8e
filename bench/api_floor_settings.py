"""The settings of bench_api's server: the service's own, with the two reads of
bench/api_floor_urls.py added to its addresses."""

from config.settings import *  # noqa: F403

ROOT_URLCONF = "bench.api_floor_urls"
