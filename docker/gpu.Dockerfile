# syntax=docker/dockerfile:1
# The GPU node's image: vLLM (requirements/gpu.txt) and the service's code. A GPU node
# runs two containers of it side by side (docs/deploy.md, "The GPU node"):
#   vllm serve <the recommended model>                  the model server, holding the GPU
#   celery -A config worker -Q process,retry --pool threads -c 64
#                                                       the worker that runs the batches
#                                                       against that server (this CMD)
# Build from the repository root: `docker build -f docker/gpu.Dockerfile .`
#
# The base is CUDA's devel image, as vLLM's own image is: vLLM's wheels run on torch
# built for CUDA 13, and FlashInfer and Triton compile some kernels at first use, which
# needs nvcc and a C compiler. The host needs an NVIDIA driver for CUDA 13 (R580 or
# later) and the NVIDIA Container Toolkit.

FROM nvidia/cuda:13.0.1-devel-ubuntu22.04
ENV DEBIAN_FRONTEND=noninteractive \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DJANGO_SETTINGS_MODULE=config.settings
# Python 3.11 (the project's version) from the deadsnakes archive, as vLLM's image does;
# its headers and build-essential are what Triton's kernel launchers compile against.
RUN apt-get update \
 && apt-get install -y --no-install-recommends software-properties-common gpg-agent \
 && add-apt-repository -y ppa:deadsnakes/ppa \
 && apt-get update \
 && apt-get install -y --no-install-recommends \
      python3.11 python3.11-dev python3.11-venv build-essential \
 && apt-get purge -y --auto-remove software-properties-common gpg-agent \
 && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/app app
WORKDIR /app
# vLLM and torch first (gigabytes, rarely changed), the code last: a code change rebuilds
# and ships only the top layer.
COPY requirements/base.txt requirements/prod.txt requirements/gpu.txt requirements/
RUN python3.11 -m venv /opt/venv && pip install -r requirements/gpu.txt
COPY . .
# ~/.cache holds the model's weights (Hugging Face cache, about 31 GB) and vLLM's compiled
# kernels: a volume in compose, so a restart neither downloads nor compiles again.
RUN mkdir -p var /home/app/.cache \
 && chown app:app var /home/app/.cache
USER app
CMD ["celery", "-A", "config", "worker", "-Q", "process,retry", "-n", "gpu@%h", "--pool", "threads", "-c", "64", "--loglevel", "INFO"]
