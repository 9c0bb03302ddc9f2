"""Installing a look-alike of a popular package: the shape of a typosquat (pure).

`Typosquat` is one of the quarantine's rules (governance/instructions.py): it matches where an install
command (`pip install`, `uv add`, `poetry add`, `pipx install`...) names a package one edit (a letter added,
dropped, changed, or two neighbours swapped: rapidfuzz's OSA distance) from one of the most installed PyPI
packages without being one of them (`pip install reqeusts-toolbelt2`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator

from rapidfuzz.distance import OSA

__all__ = ["Typosquat"]


# The most installed PyPI packages (and real ones a letter away from them: scapy, pyaml, simpy...): a name one
# edit (a letter added, dropped, changed, or two swapped) from one of them, and not one of them, is a
# look-alike (`reqeusts`, `requests2`, `numpyy`), the shape of a typosquatted package
_POPULAR_PACKAGES = frozenset(
    """
    requests urllib3 certifi idna charset-normalizer setuptools wheel pip packaging six python-dateutil pyyaml
    pyaml numpy pandas scipy scapy sympy simpy matplotlib seaborn plotly pillow boto3 botocore s3transfer
    awscli aiobotocore s3fs fsspec attrs cattrs click typer rich colorama tqdm jinja2 markupsafe werkzeug
    flask django djangorestframework fastapi starlette uvicorn gunicorn pydantic pydantic-core httpx httpcore
    aiohttp yarl multidict frozenlist aiosignal anyio sniffio h11 websockets grpcio protobuf
    googleapis-common-protos
    google-auth google-api-core google-cloud-storage cryptography cffi pycparser pyopenssl bcrypt paramiko
    pynacl rsa pyasn1 oauthlib requests-oauthlib requests-toolbelt jmespath pytz tzdata tzlocal pytest
    pytest-cov pytest-mock pytest-asyncio pytest-xdist coverage mock tox nox virtualenv filelock platformdirs
    distlib black isort flake8 pylint mypy ruff pre-commit pyflakes pycodestyle sqlalchemy alembic psycopg
    psycopg2 psycopg2-binary asyncpg pymysql mysqlclient redis celery kombu pymongo elasticsearch docker
    kubernetes openai anthropic langchain tiktoken transformers tokenizers huggingface-hub datasets torch
    torchvision tensorflow keras scikit-learn joblib threadpoolctl xgboost lightgbm opencv-python nltk spacy
    beautifulsoup4 soupsieve lxml html5lib selenium playwright scrapy pyarrow polars openpyxl xlrd
    python-dotenv toml tomli tomlkit ujson orjson simplejson msgpack regex chardet decorator wrapt
    deprecated importlib-metadata zipp typing-extensions more-itertools pyparsing docutils sphinx pygments
    babel markdown mistune pyjwt jsonschema marshmallow arrow pendulum python-multipart itsdangerous
    sentry-sdk structlog loguru prometheus-client opentelemetry-api opentelemetry-sdk grpcio-tools
    temporalio pgvector rapidfuzz hypothesis faker factory-boy freezegun responses respx tenacity backoff
    cachetools psutil pexpect ptyprocess ipython jupyter notebook nbformat traitlets tornado greenlet gevent
    networkx sqlparse pyodbc cython numba llvmlite gitpython unidiff
    """.split()
)
# first words many packages share ("types-requests", "python-jose", "pytest-cov", "flask-cors")
_PACKAGE_PREFIXES = frozenset(
    "types python pytest flask django sphinx google azure jupyter mypy apache".split()
)
_OPTIONS_WITH_VALUES = frozenset(
    "-r --requirement -c --constraint -e --editable -i --index-url --extra-index-url -f --find-links"
    " -t --target --python --group".split()
)
_INSTALL = re.compile(
    r"\b(?:pip[0-9.]*|python[0-9.]*\s+-m\s+pip|uv\s+pip|pipx)\s+install\b([^\n;&|`]{1,300})"
    r"|\b(?:poetry|uv)\s+add\b([^\n;&|`]{1,300})",
    re.IGNORECASE | re.DOTALL,
)
_PACKAGE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]*")
# words that end the list of packages in prose ("pip install requests and then run ...")
_PROSE = frozenset(
    "and then to in for with before after inside first if or on from so into as via using the a".split()
)


def _package_names(arguments: str) -> Iterator[str]:
    """The package names an install command's arguments ask for: options and their values, paths, URLs and
    the prose after the command left out."""
    skip = False
    for token in arguments.split()[:12]:
        token = token.strip("'\"“”,")
        if skip:
            skip = False
            continue
        if token.startswith("-"):
            skip = token in _OPTIONS_WITH_VALUES
            continue
        if token in _PROSE:
            return
        if "/" in token or ":" in token or "\\" in token or token.startswith("."):
            continue
        name = _PACKAGE_NAME.match(token)
        if name:
            yield name.group(0)


def _one_edit(a: str, b: str) -> bool:
    """Whether `a` and `b` differ by one letter added, dropped or changed, or two neighbours swapped."""
    if a == b or abs(len(a) - len(b)) > 1:
        return False
    return bool(OSA.distance(a, b, score_cutoff=1) <= 1)


# names compared without their separators (`mysql-client` is `mysqlclient`); short names are left out: one
# edit from a four-letter name is another word (`attr`, `toml`, `rich`)
_POPULAR_SQUASHED = frozenset(p.replace("-", "") for p in _POPULAR_PACKAGES if len(p) >= 5)
_POPULAR_FIRST_WORDS = frozenset(p.split("-")[0] for p in _POPULAR_PACKAGES) | _PACKAGE_PREFIXES


@functools.lru_cache(maxsize=4096)
def _looks_like_popular(name: str) -> bool:
    """A package name one edit from a popular one (whole, or its first word) that is not one itself."""
    name = re.sub(r"[-_.]+", "-", name.strip("-_."))
    squashed = name.replace("-", "")
    if name in _POPULAR_PACKAGES or squashed in _POPULAR_SQUASHED:
        return False
    if len(squashed) >= 5 and any(_one_edit(squashed, p) for p in _POPULAR_SQUASHED):
        return True
    first = name.split("-")[0]
    if len(first) < 5 or first == name or first in _POPULAR_FIRST_WORDS:
        return False
    return any(_one_edit(first, p) for p in _POPULAR_SQUASHED)


class Typosquat:
    """Matches where an install command (`pip install`, `uv add`, `poetry add`...) names a look-alike of a
    popular package (`_looks_like_popular`)."""

    patterns = (_INSTALL,)

    def search(self, text: str) -> bool:
        for match in _INSTALL.finditer(text):
            arguments = match.group(1) or match.group(2) or ""
            if any(_looks_like_popular(name) for name in _package_names(arguments)):
                return True
        return False
