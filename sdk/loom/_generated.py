"""Loom's typed results, generated from its OpenAPI document by
`python -m chalicelib.sdk_codegen`: do not edit."""

from __future__ import annotations

from typing import Any, Literal, TypedDict


class AppliedOut(TypedDict, total=False):
    action: str
    key: str
    user_id: str
    changed: bool
    confidence_before: float
    confidence_after: float
    tags_after: list[str]


class Batch(TypedDict, total=False):
    queue_id: str
    status: str
    attempts: int
    sizes: dict[str, Any]
    last_error: str
    held_reason: str
    created_at: str
    updated_at: str


class BriefSections(TypedDict, total=False):
    goal: str
    status: str
    decisions: list[str]
    dead_ends: list[str]
    done: list[str]
    open_questions: list[str]
    next_steps: list[str]
    key_files: list[str]
    constraints: list[str]
    pointers: list[str]


class Candidate(TypedDict, total=False):
    candidate_id: str
    agent: str
    key: str
    text: str
    support: int
    rationale: Rationale | None
    status: Literal["pending", "promoted", "rejected"]
    destination: str
    decided_by: str
    decided_at: str | None
    note: str
    created_at: str


class ContextPackResult(TypedDict, total=False):
    text: str
    sections: list[PackedSection]
    tokens: int
    truncated: bool
    pending_extraction: bool
    ignored_args: list[str]


class ConversationAppendResult(TypedDict, total=False):
    msg_id: str
    ts: str
    stored: bool
    reason: Literal["", "duplicate", "logging_disabled", "deleted"]
    ignored_args: list[str]


class ConversationCompactResult(TypedDict, total=False):
    compacted: bool
    messages_summarized: int
    summary_msg_id: str
    tokens_in: int
    tokens_out: int
    reason: str
    ignored_args: list[str]


class ConversationCreateResult(TypedDict, total=False):
    thread_id: str
    created_at: str
    ignored_args: list[str]


class ConversationDeleteResult(TypedDict, total=False):
    tombstoned_at: str
    thread_id: str
    rows_affected: dict[str, int]
    total: int
    ignored_args: list[str]


class ConversationGetLoggingResult(TypedDict, total=False):
    namespace: str
    enabled: bool
    ignored_args: list[str]


class ConversationGetResult(TypedDict, total=False):
    found: bool
    thread_id: str
    title: str
    metadata: dict[str, Any]
    run_id: str
    user_id: str
    agent: str
    created_at: str | None
    updated_at: str | None
    msg_count: int
    messages: list[TurnOut]
    next_cursor: str | None
    ignored_args: list[str]


class ConversationHit(TypedDict, total=False):
    msg_id: str
    thread_id: str
    role: str
    excerpt: str
    similarity: float | None
    score: float | None
    agent: str
    user_id: str
    run_id: str
    ts: str
    namespace: str


class ConversationListResult(TypedDict, total=False):
    rows: list[TurnOut]
    next_cursor: str | None
    ignored_args: list[str]


class ConversationListSavedMessagesResult(TypedDict, total=False):
    rows: list[dict[str, Any]]
    next_cursor: str | None
    ignored_args: list[str]


class ConversationSaveMessageResult(TypedDict, total=False):
    conversation_id: str
    message_id: str
    indexed: bool
    reason: Literal[
        "",
        "duplicate",
        "owner_mismatch",
        "deleted",
        "unsupported_role",
        "embed_failed",
        "high_sensitivity",
    ]
    ts: str
    ignored_args: list[str]


class ConversationSavedStatusResult(TypedDict, total=False):
    saved: list[str]
    ignored_args: list[str]


class ConversationSearchResult(TypedDict, total=False):
    hits: list[ConversationHit]
    namespaces_skipped: list[str]
    ignored_args: list[str]


class ConversationSearchSavedMessagesResult(TypedDict, total=False):
    hits: list[SavedRow]
    ignored_args: list[str]


class ConversationSetLoggingResult(TypedDict, total=False):
    namespace: str
    enabled: bool
    ignored_args: list[str]


class ConversationThreadsResult(TypedDict, total=False):
    threads: list[dict[str, Any]]
    ignored_args: list[str]


class ConversationUnsaveMessageResult(TypedDict, total=False):
    conversation_id: str
    message_id: str
    found: bool
    removed: bool
    ts: str
    ignored_args: list[str]


class ConversationUpdateResult(TypedDict, total=False):
    updated: bool
    thread_id: str
    updated_at: str | None
    ignored_args: list[str]


class DocumentOut(TypedDict, total=False):
    uri: str
    title: str
    text: str
    tags: list[str]
    author: str
    version: int
    created_at: str
    updated_at: str


class DocumentRow(TypedDict, total=False):
    uri: str
    title: str
    tags: list[str]
    version: int
    updated_at: str
    chars: int


class ErasureExportResult(TypedDict, total=False):
    subject: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]]
    not_exported: dict[str, str]
    next_cursor: str | None
    ignored_args: list[str]


class ErasureRequestResult(TypedDict, total=False):
    job_id: str
    status: Literal["pending", "running", "done", "failed"]
    kind: str
    user_id: str | None
    namespaces: list[str] | None
    purge: bool
    tombstoned: dict[str, int]
    removed: dict[str, int]
    last_error: str
    created_at: str
    finished_at: str | None
    ignored_args: list[str]


class ErasureStatusResult(TypedDict, total=False):
    found: bool
    job: JobOut | None
    ignored_args: list[str]


class EvidenceTurn(TypedDict, total=False):
    evidence_id: int
    version: int
    role: str
    name: str
    content: str
    span: str
    ts: str
    session_id: str


class ExtractionPolicyClearResult(TypedDict, total=False):
    scope: str
    namespace: str
    cleared: bool
    ignored_args: list[str]


class ExtractionPolicyGetResult(TypedDict, total=False):
    scope: str
    namespace: str
    policy: str
    effective: str
    namespace_policies: list[str]
    ignored_args: list[str]


class ExtractionPolicySetResult(TypedDict, total=False):
    scope: str
    namespace: str
    policy: str
    effective: str
    namespace_policies: list[str]
    ignored_args: list[str]


class JobOut(TypedDict, total=False):
    job_id: str
    status: Literal["pending", "running", "done", "failed"]
    kind: str
    user_id: str | None
    namespaces: list[str] | None
    purge: bool
    tombstoned: dict[str, int]
    removed: dict[str, int]
    last_error: str
    created_at: str
    finished_at: str | None


class KnowledgeDeleteResult(TypedDict, total=False):
    uri: str
    found: bool
    ignored_args: list[str]


class KnowledgeGetResult(TypedDict, total=False):
    found: bool
    document: DocumentOut | None
    ignored_args: list[str]


class KnowledgeHit(TypedDict, total=False):
    namespace: str
    uri: str
    title: str
    chunk: int
    excerpt: str
    score: float
    tags: list[str]


class KnowledgeListResult(TypedDict, total=False):
    documents: list[DocumentRow]
    next_cursor: str | None
    ignored_args: list[str]


class KnowledgePublishResult(TypedDict, total=False):
    uri: str
    version: int
    changed: bool
    chunks: int
    chunks_withheld: int
    ignored_args: list[str]


class KnowledgeSearchResult(TypedDict, total=False):
    hits: list[KnowledgeHit]
    namespaces_skipped: list[str]
    ignored_args: list[str]


class LearningsListResult(TypedDict, total=False):
    candidates: list[Candidate]
    next_cursor: str | None
    ignored_args: list[str]


class LearningsReviewResult(TypedDict, total=False):
    found: bool
    candidate_id: str
    status: Literal["pending", "promoted", "rejected"] | None
    version: int
    destination: str
    uri: str
    key: str
    ignored_args: list[str]


class MemoryApplyResult(TypedDict, total=False):
    applied: list[AppliedOut]
    unknown: list[UnknownOut]
    dry_run: bool
    ignored_args: list[str]


class MemoryAskResult(TypedDict, total=False):
    passages: list[Passage]
    pending_extraction: bool
    answer: str | None
    answer_error: str | None
    ignored_args: list[str]


class MemoryBlacklistResult(TypedDict, total=False):
    pattern: str
    namespace: str
    listed: bool
    ignored_args: list[str]


class MemoryBulkSetResult(TypedDict, total=False):
    written: list[WrittenOut]
    ignored_args: list[str]


class MemoryDeleteResult(TypedDict, total=False):
    deleted: bool
    key: str
    ignored_args: list[str]


class MemoryEvidenceResult(TypedDict, total=False):
    key: str
    turns: list[EvidenceTurn]
    ignored_args: list[str]


class MemoryExtractionRetryMineResult(TypedDict, total=False):
    requeued: list[str]
    expired: list[str]
    model_calls_off: list[str]
    left_alone: list[str]
    unknown: list[str]
    ignored_args: list[str]


class MemoryExtractionStatusMineResult(TypedDict, total=False):
    batches: list[Batch]
    unknown: list[str]
    ignored_args: list[str]


class MemoryExtractionStatusResult(TypedDict, total=False):
    batches: list[Batch]
    ignored_args: list[str]


class MemoryGetResult(TypedDict, total=False):
    found: bool
    memory: MemoryOut | None
    ignored_args: list[str]


class MemoryHit(TypedDict, total=False):
    key: str
    value: str
    score: float
    tags: list[str]
    user_id: str
    version: int
    kind: str
    confidence: float


class MemoryOut(TypedDict, total=False):
    key: str
    value: str
    kind: str
    tags: list[str]
    version: int
    user_id: str
    pinned: bool
    locked: bool
    updated_at: str
    confidence: float


class MemoryRecallResult(TypedDict, total=False):
    turns: list[RecallTurn]
    ignored_args: list[str]


class MemorySearchResult(TypedDict, total=False):
    hits: list[MemoryHit]
    filtered: dict[str, int]
    pending_extraction: bool
    ignored_args: list[str]


class MemorySetFromMessagesResult(TypedDict, total=False):
    written: list[WrittenOut]
    deferred: bool
    deferred_by: str
    queue_id: str
    tokens_in: int
    tokens_out: int
    cached_tokens_in: int
    response_cache_hits: int
    response_cache_tokens_in: int
    segments: int
    segmenter: str
    forgotten: int
    forgotten_keys: list[str]
    evidence_ids: list[int]
    learning_candidates: int
    stage_ms: dict[str, float]
    observation_date_source: Literal["caller", "request_time", ""]
    stubbed_fields: list[str]
    pipeline_errors: list[str]
    under_operator_policy: bool
    ignored_args: list[str]


class MemorySetResult(TypedDict, total=False):
    written: list[WrittenOut]
    ignored_args: list[str]


class MemoryStackResult(TypedDict, total=False):
    documents: list[StackDocument]
    memories: list[StackMemory]
    filtered: dict[str, int]
    next_cursor: str | None
    pending_extraction: bool
    ignored_args: list[str]


class ModelCallsGetResult(TypedDict, total=False):
    org: str
    enabled: bool
    changed: bool
    released: int
    ignored_args: list[str]


class ModelCallsSetResult(TypedDict, total=False):
    org: str
    enabled: bool
    changed: bool
    released: int
    ignored_args: list[str]


class ObserveCrystallizeResult(TypedDict, total=False):
    session_id: str
    observations: int
    ignored_args: list[str]


class ObserveRecordResult(TypedDict, total=False):
    observation_id: int
    session_id: str
    ts: str
    ignored_args: list[str]


class PackedSection(TypedDict, total=False):
    name: str
    items: list[dict[str, Any]]


class Passage(TypedDict, total=False):
    source: Literal["memory", "knowledge", "transcript"]
    text: str
    score: float
    key: str | None
    version: int | None
    uri: str | None
    chunk: int | None
    whole_document: bool


class Rationale(TypedDict, total=False):
    user_quote: str
    rule_quote: str


class RecallTurn(TypedDict, total=False):
    evidence_id: int
    user_id: str
    agent: str
    session_id: str
    role: str
    name: str
    content: str
    ts: str


class SavedRow(TypedDict, total=False):
    conversation_id: str
    message_id: str
    role: str
    excerpt: str
    score: float | None
    saved_at: str | None
    ts: str


class SearchResult(TypedDict, total=False):
    memory: list[dict[str, Any]]
    knowledge: list[dict[str, Any]]
    conversation: list[dict[str, Any]]
    pending_extraction: bool
    ignored_args: list[str]


class SessionBriefDeleteResult(TypedDict, total=False):
    deleted: bool
    brief_key: str
    revision: int
    ignored_args: list[str]


class SessionBriefGetResult(TypedDict, total=False):
    found: bool
    brief_key: str
    revision: int
    rendered: str
    sections: BriefSections | None
    project: str
    branch: str
    head_sha: str
    author: str
    trigger: str
    actor: str
    source_sessions: list[str]
    updated_at: str | None
    age_seconds: int
    revisions: int
    events_total: int
    source_chars: int
    brief_chars: int
    deleted: bool
    ignored_args: list[str]


class SessionBriefListResult(TypedDict, total=False):
    briefs: list[SessionBriefSummary]
    rendered: str
    ignored_args: list[str]


class SessionBriefSaveResult(TypedDict, total=False):
    brief_key: str
    revision: int
    changed: bool
    author: str
    reason: str
    rendered: str
    stats: SessionBriefStats
    ignored_args: list[str]


class SessionBriefStats(TypedDict, total=False):
    events: int
    windows: int
    windows_failed: int
    event_chars: int
    brief_chars: int
    tokens_in: int
    tokens_out: int
    model: str


class SessionBriefSummary(TypedDict, total=False):
    brief_key: str
    revision: int
    agent: str
    goal: str
    project: str
    branch: str
    updated_at: str
    age_seconds: int


class StackDocument(TypedDict, total=False):
    uri: str
    title: str
    tags: list[str]
    version: int
    updated_at: str
    chars: int


class StackMemory(TypedDict, total=False):
    key: str
    value: str
    tags: list[str]
    user_id: str
    version: int
    kind: str
    pinned: bool
    confidence: float
    updated_at: str


class SystemWhoamiResult(TypedDict, total=False):
    org: str
    role: str
    namespace: str | None
    read_scope: str
    read_user_id: str | None
    auth: str
    ignored_args: list[str]


class TurnOut(TypedDict, total=False):
    msg_id: str
    thread_id: str
    role: str
    content: str
    reasoning: str
    agent: str
    user_id: str
    run_id: str
    metadata: dict[str, Any]
    tokens: int
    ts: str


class UnknownOut(TypedDict, total=False):
    key: str
    user_id: str


class WrittenOut(TypedDict, total=False):
    key: str
    version: int
    conflict_verdict: str
    peers: list[str]
    memory_key: str


# op name: (kind, result type); kinds read and idempotent are retried on 503
OPS: dict[str, tuple[str, Any]] = {
    "context.pack": ("read", ContextPackResult),
    "conversation.append": ("idempotent", ConversationAppendResult),
    "conversation.compact": ("idempotent", ConversationCompactResult),
    "conversation.create": ("idempotent", ConversationCreateResult),
    "conversation.delete": ("idempotent", ConversationDeleteResult),
    "conversation.get": ("read", ConversationGetResult),
    "conversation.get_logging": ("read", ConversationGetLoggingResult),
    "conversation.list": ("read", ConversationListResult),
    "conversation.list_saved_messages": ("read", ConversationListSavedMessagesResult),
    "conversation.save_message": ("idempotent", ConversationSaveMessageResult),
    "conversation.saved_status": ("read", ConversationSavedStatusResult),
    "conversation.search": ("read", ConversationSearchResult),
    "conversation.search_saved_messages": ("read", ConversationSearchSavedMessagesResult),
    "conversation.set_logging": ("idempotent", ConversationSetLoggingResult),
    "conversation.threads": ("read", ConversationThreadsResult),
    "conversation.unsave_message": ("idempotent", ConversationUnsaveMessageResult),
    "conversation.update": ("idempotent", ConversationUpdateResult),
    "erasure.export": ("read", ErasureExportResult),
    "erasure.request": ("idempotent", ErasureRequestResult),
    "erasure.status": ("read", ErasureStatusResult),
    "extraction_policy.clear": ("idempotent", ExtractionPolicyClearResult),
    "extraction_policy.get": ("read", ExtractionPolicyGetResult),
    "extraction_policy.set": ("idempotent", ExtractionPolicySetResult),
    "knowledge.delete": ("idempotent", KnowledgeDeleteResult),
    "knowledge.get": ("read", KnowledgeGetResult),
    "knowledge.list": ("read", KnowledgeListResult),
    "knowledge.publish": ("idempotent", KnowledgePublishResult),
    "knowledge.search": ("read", KnowledgeSearchResult),
    "learnings.list": ("read", LearningsListResult),
    "learnings.review": ("write", LearningsReviewResult),
    "memory.apply": ("idempotent", MemoryApplyResult),
    "memory.ask": ("read", MemoryAskResult),
    "memory.blacklist": ("idempotent", MemoryBlacklistResult),
    "memory.bulk_set": ("idempotent", MemoryBulkSetResult),
    "memory.delete": ("idempotent", MemoryDeleteResult),
    "memory.evidence": ("read", MemoryEvidenceResult),
    "memory.extraction_retry_mine": ("idempotent", MemoryExtractionRetryMineResult),
    "memory.extraction_status": ("read", MemoryExtractionStatusResult),
    "memory.extraction_status_mine": ("read", MemoryExtractionStatusMineResult),
    "memory.get": ("read", MemoryGetResult),
    "memory.recall": ("read", MemoryRecallResult),
    "memory.search": ("read", MemorySearchResult),
    "memory.set": ("idempotent", MemorySetResult),
    "memory.set_from_messages": ("write", MemorySetFromMessagesResult),
    "memory.stack": ("read", MemoryStackResult),
    "model_calls.get": ("read", ModelCallsGetResult),
    "model_calls.set": ("idempotent", ModelCallsSetResult),
    "observe.crystallize": ("idempotent", ObserveCrystallizeResult),
    "observe.record": ("write", ObserveRecordResult),
    "search": ("read", SearchResult),
    "session.brief_delete": ("idempotent", SessionBriefDeleteResult),
    "session.brief_get": ("read", SessionBriefGetResult),
    "session.brief_list": ("read", SessionBriefListResult),
    "session.brief_save": ("idempotent", SessionBriefSaveResult),
    "system.whoami": ("read", SystemWhoamiResult),
}


# op name: the identity fields its input takes; an Agent fills in only these
IDENTITY: dict[str, tuple[str, ...]] = {
    "context.pack": ("org", "namespace", "agent"),
    "conversation.append": ("org", "namespace", "agent"),
    "conversation.compact": ("org", "namespace", "agent"),
    "conversation.create": ("org", "namespace", "agent"),
    "conversation.delete": ("org", "namespace", "agent"),
    "conversation.get": ("org", "namespace", "agent"),
    "conversation.get_logging": ("org", "namespace"),
    "conversation.list": ("org", "namespace", "agent"),
    "conversation.list_saved_messages": ("org", "namespace", "agent"),
    "conversation.save_message": ("org", "namespace", "agent"),
    "conversation.saved_status": ("org", "namespace", "agent"),
    "conversation.search": ("org", "namespace", "agent"),
    "conversation.search_saved_messages": ("org", "namespace", "agent"),
    "conversation.set_logging": ("org", "namespace"),
    "conversation.threads": ("org", "namespace", "agent"),
    "conversation.unsave_message": ("org", "namespace", "agent"),
    "conversation.update": ("org", "namespace", "agent"),
    "erasure.export": ("org", "namespace"),
    "erasure.request": ("org", "namespace"),
    "erasure.status": ("org",),
    "extraction_policy.clear": ("org", "namespace"),
    "extraction_policy.get": ("org", "namespace"),
    "extraction_policy.set": ("org", "namespace"),
    "knowledge.delete": ("org", "namespace"),
    "knowledge.get": ("org", "namespace"),
    "knowledge.list": ("org", "namespace"),
    "knowledge.publish": ("org", "namespace"),
    "knowledge.search": ("org", "namespace"),
    "learnings.list": ("org", "namespace", "agent"),
    "learnings.review": ("org", "namespace"),
    "memory.apply": ("org", "namespace"),
    "memory.ask": ("org", "namespace", "agent"),
    "memory.blacklist": ("org", "namespace"),
    "memory.bulk_set": ("org", "namespace", "agent"),
    "memory.delete": ("org", "namespace", "agent"),
    "memory.evidence": ("org", "namespace", "agent"),
    "memory.extraction_retry_mine": ("org", "namespace", "agent"),
    "memory.extraction_status": ("org", "namespace", "agent"),
    "memory.extraction_status_mine": ("org", "namespace", "agent"),
    "memory.get": ("org", "namespace", "agent"),
    "memory.recall": ("org", "namespace", "agent"),
    "memory.search": ("org", "namespace", "agent"),
    "memory.set": ("org", "namespace", "agent"),
    "memory.set_from_messages": ("org", "namespace", "agent"),
    "memory.stack": ("org", "namespace", "agent"),
    "model_calls.get": ("org",),
    "model_calls.set": ("org",),
    "observe.crystallize": ("org", "namespace", "agent"),
    "observe.record": ("org", "namespace", "agent"),
    "search": ("org", "namespace", "agent"),
    "session.brief_delete": ("org", "namespace", "agent"),
    "session.brief_get": ("org", "namespace", "agent"),
    "session.brief_list": ("org", "namespace", "agent"),
    "session.brief_save": ("org", "namespace", "agent"),
    "system.whoami": (),
}
