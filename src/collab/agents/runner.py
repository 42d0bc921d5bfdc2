"""What an agent execution does, without the database: gather the content its contextGathering asks for (the page
at `url` through the SSRF guard, HTML to text), ask the workspace's model for findings, validate them (ADR 0055)."""

import asyncio
import codecs
import html
import json
import logging
import re
import time
from typing import Any, Awaitable, Callable, Literal

import httpx
from pydantic import BaseModel, Field

from collab import prompts
from collab.config import Settings
from collab.kit import safety, threads
from collab.kit.errors import ApiError
from collab.llm.answers import AnswerError, parse
from collab.llm.client import LlmError, complete, messages_for, response_format
from collab.llm.routing import EXTRACTION_PROVIDERS, Route, resolve, small
from collab.workspaces.model_servers import ModelAccess

log = logging.getLogger("collab.agents")
PROMPT = "review_content"
PAGE_STRATEGIES = frozenset({"web-page-text", "web-page-html"})  # the strategies that read the page's content
MAX_CONTENT_CHARS = 60_000  # of page and document text sent to the model; the rest is cut, and the cut is said
MAX_FINDINGS = 50  # kept per execution, the most severe first (Velt trims its summary sample to 50)
MAX_REDIRECTS = 3
# What an execution keeps of the page it fetched (agents/execution/get's crawlerResults): the title's characters
# and the text excerpt's UTF-8 bytes at most; the title is looked for in the page's first bytes only.
MAX_TITLE_CHARS = 300
MAX_EXCERPT_BYTES = 1000
TITLE_SCAN_BYTES = 64 * 1024
_TITLE = re.compile(r"<title\b[^>]{0,1000}>([^<]{0,4000})", re.IGNORECASE)
_SKIPPED_TAGS = frozenset({"script", "style", "noscript", "template", "svg", "head"})
_BLOCK_TAGS = frozenset({
    "p", "div", "br", "li", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "section", "article", "header", "footer", "main",
    "nav", "ul", "ol", "table", "blockquote", "pre", "title"
})


class Failure(Exception):
    """An execution that ends `error`: `code` is one of Velt's execution error codes, `message` is for tenants."""

    def __init__(self, code: str, message: str, *, retryable: bool = False, fetched: dict[str, Any] | None = None):
        super().__init__(message)
        self.code, self.message, self.retryable = code, message, retryable
        self.fetched = fetched  # what the page fetch got before it failed, when it got an answer


class Finding(BaseModel):
    title: str = Field(min_length=1, max_length=500)
    description: str = Field(max_length=5000)
    severity: Literal["critical", "high", "medium", "low", "info"]
    targetText: str = Field(max_length=2000)
    suggestion: str = Field(max_length=5000)
    confidence: int = Field(ge=0, le=100)


class Review(BaseModel):
    summary: str = Field(max_length=2000)
    findings: list[Finding] = Field(max_length=500)


# --- the page -----------------------------------------------------------------------------------------------------

# HTML to text is a scanner that only moves forward: every search starts where the last one ended, and a search
# that finds nothing (an unterminated tag, comment, quote or script) ends the scan, so the work is linear in the
# markup (html.parser is not: unterminated tags made it super-linear, about 13 s for 80 KB of `<a`).
# Their content is text up to the end tag, never markup; both are skipped.
_RAW_TEXT = {name: re.compile(f"</{name}", re.IGNORECASE) for name in ("script", "style")}
_NAME_END = re.compile(r"[\s/>]")
_VALUE_OR_END = re.compile(r"""=\s*["']|>""")  # a quoted attribute value opens, or the tag ends


def _tag_end(markup: str, start: int) -> int:
    """The index of the `>` that ends the tag whose name starts at `start` (quoted values may hold `>`); -1 when
    the tag is never closed."""
    at = start
    while True:
        found = _VALUE_OR_END.search(markup, at)
        if found is None:
            return -1
        if found.group() == ">":
            return found.start()
        close = markup.find(found.group()[-1], found.end())
        if close < 0:
            return -1
        at = close + 1


def html_text(markup: str) -> str:
    """The readable text of an HTML document, one block a line, blank runs collapsed: scripts, styles and the head
    left out. Linear in the markup (see above); what follows an unterminated tag or comment is dropped."""
    parts: list[str] = []
    hidden, at, end = 0, 0, len(markup)
    while at < end:
        lt = markup.find("<", at)
        if lt < 0:
            lt = end
        if lt > at and not hidden:
            parts.append(markup[at:lt])
        if lt >= end:
            break
        after = markup[lt + 1:lt + 2]
        if after in ("!", "?"):  # a comment, doctype, CDATA or processing instruction: no text
            closing = "-->" if markup.startswith("<!--", lt) else ">"
            stop = markup.find(closing, lt + 2)
            if stop < 0:
                break
            at = stop + len(closing)
            continue
        name_at = lt + 2 if after == "/" else lt + 1
        if not markup[name_at:name_at + 1].isascii() or not markup[name_at:name_at + 1].isalpha():
            if not hidden:
                parts.append("<")  # a lone `<` is text, as browsers read it
            at = lt + 1
            continue
        stop = _tag_end(markup, name_at)
        if stop < 0:
            break
        name_end = _NAME_END.search(markup, name_at, stop)
        name = markup[name_at:name_end.start() if name_end else stop].lower()
        at = stop + 1
        if after == "/":
            if name in _SKIPPED_TAGS:
                hidden = max(0, hidden - 1)
            elif name in _BLOCK_TAGS:
                parts.append("\n")
        elif name in _RAW_TEXT:
            close = _RAW_TEXT[name].search(markup, at)
            if close is None:
                break
            stop = markup.find(">", close.end())
            at = end if stop < 0 else stop + 1
        elif name in _SKIPPED_TAGS:
            hidden += markup[stop - 1] != "/"  # `<svg/>` opens and closes at once
        elif name in _BLOCK_TAGS:
            parts.append("\n")
    lines = (" ".join(line.split()) for line in html.unescape("".join(parts)).splitlines())
    return "\n".join(line for line in lines if line).replace("\x00", "")


def text_codec(name: str | None) -> str:
    """The codec a page's charset names when it is a text encoding (`rot13`, `base64`, `hex`, `zlib_codec` are
    not), else utf-8."""
    name = name or "utf-8"
    try:
        # bytes.decode refuses a name no codec has, and a codec that is no text encoding, with LookupError.
        b"a".decode(name, errors="replace")
    except LookupError:
        return "utf-8"
    except UnicodeError:  # a text codec that takes no `replace` (idna): page_text falls back itself
        pass
    return codecs.lookup(name).name


def page_text(raw: bytes, *, charset: str | None, content_type: str, max_bytes: int) -> str:
    """A fetched page as text: its first `max_bytes` decoded (a text charset, else utf-8, never failing), HTML made
    its visible text. CPU work on untrusted input, bounded and linear: run it off the event loop."""
    head = raw[:max_bytes]
    try:
        text = head.decode(text_codec(charset), errors="replace")
    except (UnicodeError, LookupError):  # a text codec that takes no `replace` (idna, punycode)
        text = head.decode("utf-8", errors="replace")
    if "html" in content_type or "<html" in text[:1000].lower():
        return html_text(text)
    return text.replace("\x00", "")


def excerpt(text: str, max_bytes: int = MAX_EXCERPT_BYTES) -> str:
    """The start of a text, at most `max_bytes` of UTF-8 (never a cut character)."""
    return text.encode()[:max_bytes].decode(errors="ignore")


def page_read(raw: bytes, *, charset: str | None, content_type: str, max_bytes: int) -> tuple[str, str | None]:
    """`page_text`, and the page's <title> (unescaped, whitespace folded, at most MAX_TITLE_CHARS) when its first
    TITLE_SCAN_BYTES have one. Bounded CPU work on untrusted input: run it off the event loop."""
    text = page_text(raw, charset=charset, content_type=content_type, max_bytes=max_bytes)
    title = None
    if "html" in content_type or "<html" in text[:1000].lower() or b"<title" in raw[:TITLE_SCAN_BYTES].lower():
        try:
            head = raw[:TITLE_SCAN_BYTES].decode(text_codec(charset), errors="replace")
        except (UnicodeError, LookupError):  # a text codec that takes no `replace` (idna, punycode)
            head = raw[:TITLE_SCAN_BYTES].decode("utf-8", errors="replace")
        found = _TITLE.search(head)
        if found:
            title = " ".join(html.unescape(found.group(1)).split())[:MAX_TITLE_CHARS] or None
    return text, title


class Page(BaseModel):
    """A fetched page: its text, and what the fetch got as the execution records it (crawlerResults.pages)."""

    text: str
    fetched: dict[str, Any]


def _fetched(url: str, status: int, size: int, title: str | None = None, text: str | None = None) -> dict[str, Any]:
    record: dict[str, Any] = {"url": url, "status": status, "bytes": size}
    if title:
        record["title"] = title
    if text:
        record["excerpt"] = excerpt(text)
    return record


async def fetch_page(settings: Settings, url: str) -> Page:
    """The text of the page at `url`: fetched through the SSRF guard (redirects checked again), within the page
    byte and time budgets; `Failure(CONTEXT_GATHERING_ERROR)` when it cannot be read (with what the fetch got when
    the page answered)."""
    allow_private, budget = settings.agent_execution_allow_private_pages, settings.agent_execution_page_max_bytes
    try:
        async with asyncio.timeout(settings.agent_execution_page_timeout_s):
            async with httpx.AsyncClient(follow_redirects=False, trust_env=False,
                                         timeout=settings.agent_execution_page_timeout_s) as client:
                for _ in range(MAX_REDIRECTS + 1):
                    target = await safety.pin(url, allow_private=allow_private)
                    request = client.build_request(
                        "GET", target.url, headers={
                            "accept": "text/html, text/plain;q=0.9", "user-agent": "collab-agent/1", **target.headers
                        }, extensions=target.extensions)
                    response = await client.send(request, stream=True)
                    try:
                        if response.is_redirect and response.headers.get("location"):
                            url = str(httpx.URL(url).join(response.headers["location"]))
                            continue
                        raw = bytearray()
                        async for chunk in response.aiter_bytes():
                            raw += chunk
                            if len(raw) > budget:
                                raise Failure("CONTEXT_GATHERING_ERROR", f"The page is over {budget} bytes.",
                                              fetched=_fetched(url, response.status_code, len(raw)))
                    finally:
                        await response.aclose()
                    if response.status_code >= 400:
                        raise Failure("CONTEXT_GATHERING_ERROR", f"The page answered HTTP {response.status_code}.",
                                      retryable=response.status_code >= 500,
                                      fetched=_fetched(url, response.status_code, len(raw)))
                    text, title = await threads.run("pages", page_read, bytes(raw), charset=response.charset_encoding,
                                                    content_type=response.headers.get("content-type", "").lower(),
                                                    max_bytes=settings.agent_execution_page_parse_max_bytes)
                    return Page(text=text, fetched=_fetched(url, response.status_code, len(raw), title, text))
                raise Failure("CONTEXT_GATHERING_ERROR", f"The page redirected more than {MAX_REDIRECTS} times.")
    except safety.Refused as exc:
        raise Failure("CONTEXT_GATHERING_ERROR", f"The page's URL is refused: {exc}") from None
    except TimeoutError:
        raise Failure("CONTEXT_GATHERING_ERROR", "The page did not answer within "
                      f"{settings.agent_execution_page_timeout_s:g} s.", retryable=True) from None
    except httpx.HTTPError as exc:
        raise Failure("CONTEXT_GATHERING_ERROR", f"The page could not be fetched ({type(exc).__name__}).",
                      retryable=True) from None


def wants_page(behaviour: dict[str, Any]) -> bool:
    """Whether the agent's contextGathering asks for the page's content (["none"] asks for nothing)."""
    strategies = (behaviour.get("contextGathering") or {}).get("strategies") or []
    return bool(PAGE_STRATEGIES & set(strategies))


def context_json(user_context: dict[str, Any]) -> str:
    """The run's userContext as the prompt shows it: JSON, at most half the content budget (the API refuses more;
    this bounds a row stored before it did)."""
    text = json.dumps(user_context, ensure_ascii=False)
    if len(text) > MAX_CONTENT_CHARS // 2:
        text = text[:MAX_CONTENT_CHARS // 2] + " [... the rest of the user context was cut ...]"
    return text


def content_of(*, page: str | None, document: list[tuple[str, Any]], context: str = "") -> str:
    """What the model reviews: the page's text, then each stored editor's content, cut where it and the run's
    userContext (`context`, as sent) pass the character budget together."""
    parts = []
    if page is not None:
        parts.append(f"--- Page text ---\n{page}")
    for editor_id, data in document:
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        parts.append(f"--- Document editor {editor_id} ---\n{text}")
    whole = "\n\n".join(parts) or "(no content)"
    budget = max(0, MAX_CONTENT_CHARS - len(context))
    if len(whole) > budget:
        whole = whole[:budget] + "\n[... the rest of the content was cut ...]"
    return whole


# The knowledge rules of the execution's scope the model is given at most (each at most 1,000 characters).
KNOWLEDGE_RULES = 30


def with_knowledge(instructions: str, rules: list[dict[str, Any]]) -> str:
    """The agent's instructions followed by the knowledge rules of the execution's scope (knowledge/retrieval)."""
    if not rules:
        return instructions
    lines = "\n".join(f"- {r['text']}" + (f" [{r['category']}]" if r.get("category") else "") for r in rules)
    return f"{instructions}\n\nWorkspace knowledge rules that also apply to this content:\n{lines}"


# --- the model ----------------------------------------------------------------------------------------------------


def provider_of(settings: Settings, *, behaviour: dict[str, Any], ai_config: dict[str, Any] | None) -> str:
    """Velt's provider name of an execution: the run's aiConfig, else the agent's, else the default provider."""
    agent_ai = ((behaviour.get("execution") or {}).get("aiConfig") or {})
    return (ai_config or {}).get("provider") or agent_ai.get("provider") or settings.extraction_default_provider


def route_for(settings: Settings, *, behaviour: dict[str, Any], ai_config: dict[str, Any] | None,
              configured: str | None = None) -> tuple[str, Route]:
    """(Velt's provider name, route) of an execution (`provider_of`): the model pinned by aiConfig when it belongs
    to that provider, else (a server the team runs) the model its entry or the platform `configured`, else the
    prompt's model for it."""
    ai_config = ai_config or {}
    provider = provider_of(settings, behaviour=behaviour, ai_config=ai_config)
    spec = EXTRACTION_PROVIDERS[provider]
    wanted = (ai_config.get("defaultModels") or {}).get(provider)
    if ai_config.get("model") and ai_config.get("provider") in (None, provider):
        wanted = ai_config["model"]
    model = configured or prompts.get(PROMPT, settings.prompts_dir).models.get(provider)
    if wanted:
        try:
            pinned = resolve(wanted)
            if pinned.provider == spec:
                model = pinned.model  # else dropped, as Velt drops a pin for another provider
        except ApiError:  # an unroutable model name: the prompt's model (Velt falls back silently)
            pass
    if not model:
        raise Failure(
            "LLM_ERROR", f"No model named for {spec.display}: set model in aiModelApiKey "
            f"(workspace/apikeyconfig/update) or COLLAB_{spec.setting.upper()}_MODEL")
    return provider, resolve(f"{spec.id}/{model}" if spec.self_hosted else model)


async def review(settings: Settings, *, route: Route, access: ModelAccess, instructions: str, user_context: str,
                 url: str, content: str, before_call: Callable[[], Awaitable[None]],
                 after_call: Callable[[int, int], Awaitable[None]]) -> Review:
    """Ask the model for findings; a malformed answer is sent back once, then the execution ends `error`.
    `user_context` is `context_json`'s, counted within `content`'s budget. `before_call` may refuse a call (the
    platform quota); `after_call` counts each answered one."""
    prompt = prompts.get(PROMPT, settings.prompts_dir)
    system, user = prompt.render(small=small(settings, route), instructions=instructions, user_context=user_context,
                                 url=url, content=content)
    messages = messages_for(route, system=system, user=user)
    structure = response_format(access.structured, name=PROMPT, schema=prompt.schema)
    for attempt in (1, 2):
        await before_call()
        started = time.monotonic()
        try:
            completion = await complete(route, messages=messages, api_key=access.key, api_base=access.base_url,
                                        timeout_s=settings.llm_call_timeout_s, attempts=settings.llm_attempts,
                                        backoff_s=settings.llm_retry_backoff_s, response_format=structure)
        except LlmError as exc:
            await after_call(0, 0)
            if exc.kind == "rate_limited":
                raise Failure("LLM_RATE_LIMITED", f"{route.provider.display} is rate limiting requests.",
                              retryable=True) from None
            raise Failure("LLM_ERROR", f"The model call failed: {exc.message}", retryable=exc.kind
                          in ("unavailable", "timeout")) from None
        await after_call(completion.prompt_tokens, completion.completion_tokens)
        try:
            return parse(completion.text, Review)
        except AnswerError as exc:
            log.warning("malformed review answer (attempt %d, %.1f s): %s", attempt, time.monotonic() - started, exc)
            if attempt == 2:
                raise Failure("MALFORMED_RESPONSE", f"The model's answer was malformed after a retry ({exc}).",
                              retryable=True) from None
            messages = messages + [{"role": "assistant", "content": completion.text[:20_000]}, {
                "role": "user", "content": f"That answer is invalid ({exc}). Answer again with JSON only, following "
                "the schema exactly."
            }]
    raise AssertionError("unreachable")


def ranked(findings: list[Finding]) -> list[Finding]:
    """The findings kept: the most severe first (stable), at most MAX_FINDINGS."""
    order = {s: n for n, s in enumerate(("critical", "high", "medium", "low", "info"))}
    return sorted(findings, key=lambda f: order[f.severity])[:MAX_FINDINGS]
