# CPU image of one Paddle build: a Python base plus the paddlepaddle wheel, installed offline from
# the wheels the host put in the build context (no network is needed inside the build).
#
# BASE_IMAGE: any image with python3 (3.11 for the shipped matrix's wheels), python3-venv,
# ca-certificates and libgomp1 (Paddle's wheel fails to import without it).
#
# --no-compile: pip would compile every module of every package (most of the build's CPU); the
# import check below compiles what `import paddle` loads, which is what every cell process imports. The harness builds
# one with debootstrap (`python -m harness images --make-base`); a site with a registry can
# pass its own (e.g. python:3.11-slim with libgomp1 added).
ARG BASE_IMAGE=harness-base:bookworm
FROM ${BASE_IMAGE}
ARG PADDLE_PACKAGES="paddlepaddle"
COPY wheels/ /wheels/
RUN python3 -m venv /opt/harness \
 && /opt/harness/bin/pip install --no-cache-dir --no-compile --no-index --find-links /wheels ${PADDLE_PACKAGES} setuptools \
 && /opt/harness/bin/python -c "import paddle, numpy" \
 && rm -rf /wheels
ENV PATH=/opt/harness/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    GLOG_minloglevel=1
# The harness runs children with --user; nothing here needs root at run time.
USER 65534:65534
