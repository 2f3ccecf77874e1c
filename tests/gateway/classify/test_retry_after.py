"""Server-directed waits: headers in every form, and delays written in error bodies."""

from __future__ import annotations

import calendar

import httpx
import pytest

from gateway.classify.retry_after import (
    MAX_RETRY_AFTER,
    parse_body_delay,
    parse_duration,
    parse_retry_after,
)

# openai-python tests/test_client.py (test_parse_retry_after_header) mocks "now" so that
# "Fri, 29 Sep 2023 16:28:38 GMT" is 121 s away; we inject the same instant.
NOW = float(calendar.timegm((2023, 9, 29, 16, 26, 37)))


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        # Forms read by openai-python _parse_retry_after_header
        # (docs/openai.md#openai-sdk-retries).
        pytest.param({"retry-after": "20"}, 20.0, id="seconds"),
        pytest.param({"retry-after": "0.5"}, 0.5, id="fractional-seconds"),
        pytest.param({"retry-after-ms": "1500"}, 1.5, id="ms"),
        pytest.param({"retry-after-ms": "600", "retry-after": "1"}, 0.6, id="ms-wins"),
        pytest.param({"retry-after-ms": "soon", "retry-after": "3"}, 3.0, id="bad-ms-falls-back"),
        pytest.param({"Retry-After": "7"}, 7.0, id="dict-any-case"),
        pytest.param({"RETRY-AFTER-MS": "250"}, 0.25, id="dict-upper-case-ms"),
        pytest.param({"retry-after": "Fri, 29 Sep 2023 16:28:38 GMT"}, 121.0, id="http-date"),
        pytest.param({"retry-after": "Fri, 29 Sep 2023 16:26:57 -0000"}, 20.0, id="date-minus-0"),
        pytest.param({"retry-after": "Fri, 29 Sep 2023 18:28:38 +0200"}, 121.0, id="date-offset"),
        pytest.param({"retry-after": "Fri, 29 Sep 2023 16:00:00 GMT"}, 0.0, id="date-in-past"),
        pytest.param({"retry-after": "-3"}, None, id="negative"),
        pytest.param({"retry-after": "nan"}, None, id="nan"),
        pytest.param({"retry-after": "inf"}, None, id="inf"),
        pytest.param({"retry-after-ms": "-1"}, None, id="negative-ms"),
        pytest.param({"retry-after": "Fri, 99 Foo 2023"}, None, id="garbage-date"),
        pytest.param({"retry-after": ""}, None, id="empty"),
        pytest.param({"x-ratelimit-reset-tokens": "6m0s"}, None, id="reset-header-is-not-a-wait"),
        pytest.param({}, None, id="absent"),
        pytest.param({"retry-after": "1e12"}, MAX_RETRY_AFTER, id="absurd-is-clamped"),
    ],
)
def test_parse_retry_after(headers: dict[str, str], expected: float | None) -> None:
    assert parse_retry_after(headers, now=NOW) == pytest.approx(expected)


def test_http_date_is_relative_to_the_injected_clock() -> None:
    headers = {"retry-after": "Fri, 29 Sep 2023 16:28:38 GMT"}
    assert parse_retry_after(headers, now=NOW + 100) == pytest.approx(21.0)
    assert parse_retry_after(headers, now=NOW + 500) == 0.0


def test_httpx_headers_are_case_insensitive() -> None:
    # Azure sends both; Microsoft recommends following retry-after-ms
    # (docs/azure.md#azure-errors).
    headers = httpx.Headers({"Retry-After-Ms": "6000", "Retry-After": "7"})
    assert parse_retry_after(headers, now=NOW) == 6.0


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param("26s", 26.0, id="gemini-retry-delay"),
        pytest.param("2.463586755s", 2.463586755, id="protobuf-nanos"),
        pytest.param("644ms", 0.644, id="ms"),
        pytest.param("9m38.016s", 578.016, id="groq-tpd"),
        pytest.param("2m59.56s", 179.56, id="groq-reset-header"),
        pytest.param("6m0s", 360.0, id="openai-reset-header"),
        pytest.param("1h2m", 3720.0, id="hours"),
        pytest.param("250us", 0.00025, id="micro"),
        pytest.param("250µs", 0.00025, id="micro-sign"),
        pytest.param("26", None, id="no-unit"),
        pytest.param("s", None, id="no-number"),
        pytest.param("5 s", None, id="space"),
        pytest.param("5sx", None, id="trailing-junk"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_duration(text: str, seconds: float | None) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize(
    ("error", "seconds"),
    [
        # googleapis/python-genai#1875: RetryInfo wins over the message's finer number.
        pytest.param(
            {
                "error": {
                    "code": 429,
                    "message": "You exceeded your current quota... Please retry in 53.016342224s.",
                    "status": "RESOURCE_EXHAUSTED",
                    "details": [
                        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "53s"}
                    ],
                }
            },
            53.0,
            id="gemini-retryinfo-whole-body",
        ),
        # NikkeTryHard/zerogravity#19: fractional retryDelay among other details.
        pytest.param(
            {
                "code": 429,
                "status": "RESOURCE_EXHAUSTED",
                "details": [
                    {
                        "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                        "reason": "QUOTA_EXHAUSTED",
                    },
                    {
                        "@type": "type.googleapis.com/google.rpc.RetryInfo",
                        "retryDelay": "2.463586755s",
                    },
                ],
            },
            2.463586755,
            id="gemini-retryinfo-unwrapped",
        ),
        # Gemini's list-wrapped body (docs/across-providers.md#error-body-shapes).
        pytest.param(
            [{"error": {"details": [{"@type": "google.rpc.RetryInfo", "retryDelay": "26s"}]}}],
            26.0,
            id="gemini-list",
        ),
        # googleapis/python-genai#2114 sample message, no RetryInfo.
        pytest.param(
            {"message": "You exceeded [...] Please retry in 58.934310785s."},
            58.934310785,
            id="gemini-message",
        ),
        # BuilderIO/micro-agent#86 (OpenAI TPM).
        pytest.param(
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM): "
            "Limit 30000, Used 29937, Requested 385. Please try again in 644ms.",
            0.644,
            id="openai-ms",
        ),
        pytest.param("... Please try again in 1.5s. Visit ...", 1.5, id="openai-seconds"),
        # continuedev/continue#10920 (Groq TPD).
        pytest.param(
            {
                "message": "on tokens per day (TPD): Limit 100000, Used 97050, Requested 3619. "
                "Please try again in 9m38.016s. Need more tokens?"
            },
            578.016,
            id="groq-go-duration",
        ),
        # Azure 429 (docs/azure.md#azure-errors).
        pytest.param(
            {
                "code": "429",
                "message": "... exceeded token rate limit of your current OpenAI S0 "
                "pricing tier. Please retry after 6 seconds. Please go here: https://aka.ms/oai/quotaincrease",
            },
            6.0,
            id="azure-seconds",
        ),
        pytest.param({"message": "Please retry after 86400 seconds."}, 86400.0, id="azure-a-day"),
        pytest.param({"message": "Resource exhausted. Please try again later."}, None, id="later"),
        pytest.param({"message": "Overloaded"}, None, id="no-delay"),
        pytest.param(None, None, id="none"),
        pytest.param(
            {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "x"}]},
            None,
            id="bad-retry-delay",
        ),
    ],
)
def test_parse_body_delay(error: object, seconds: float | None) -> None:
    assert parse_body_delay(error) == pytest.approx(seconds)
