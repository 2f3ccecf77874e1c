"""The classifier against real provider error bodies.

Every row is a body a provider really sent (or its documented shape), with its source:
a provider's docs page, an SDK file, or the GitHub thread it was copied from. Most of them
are summed up, with their sources, in docs/providers.md (cited by section). Where a source
documents only the type/code, the message text is abridged and the row says so.
"""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from gateway.classify.errors import (
    DETAIL_MESSAGE_LIMIT,
    classify_exception,
    classify_response,
    classify_stream_error,
)
from gateway.engine.table import TABLE
from gateway.model import Decision, ErrorKind, Failure
from gateway.secrets.shapes import PLACEHOLDER

NOW = 1_700_000_000.0

K = ErrorKind
RETRY = Decision.RETRY
FAIL = Decision.FAIL_OVER
FATAL = Decision.FATAL


@dataclass(frozen=True)
class Case:
    status: int
    body: object
    kind: ErrorKind
    decision: Decision
    retry_after: float | None = None
    headers: Mapping[str, str] = field(default_factory=dict)


def case(
    id: str,
    status: int,
    body: object,
    kind: ErrorKind,
    decision: Decision,
    *,
    retry_after: float | None = None,
    headers: Mapping[str, str] | None = None,
) -> Any:
    return pytest.param(Case(status, body, kind, decision, retry_after, headers or {}), id=id)


def oai(message: str, type: str | None, code: str | None, param: str | None = None) -> object:
    """The OpenAI envelope (docs/openai.md#openai-errors), also Azure's, Groq's, Ollama's
    and vLLM's."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def anthropic(type: str, message: str, **extra: object) -> object:
    """The Anthropic envelope (docs/anthropic.md#anthropic-errors)."""
    return {
        "type": "error",
        "error": {"type": type, "message": message, **extra},
        "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
    }


def google(code: int, status: str, message: str, *details: object) -> object:
    """The google.rpc.Status envelope (docs/gemini.md#gemini-errors)."""
    error: dict[str, object] = {"code": code, "message": message, "status": status}
    if details:
        error["details"] = list(details)
    return {"error": error}


RETRY_INFO_53S = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "53s"}

# Gemini free-tier per-day 429 (langgenius/dify#19838).
GEMINI_PER_DAY = google(
    429,
    "RESOURCE_EXHAUSTED",
    "You exceeded your current quota. Go to https://aistudio.google.com/apikey to upgrade your "
    "quota tier, or submit a quota increase request in "
    "https://ai.google.dev/gemini-api/docs/rate-limits#request-rate-limit-increase",
    {
        "@type": "type.googleapis.com/google.rpc.QuotaFailure",
        "violations": [
            {
                "quotaMetric": "generativelanguage.googleapis.com/"
                "generate_requests_per_model_per_day",
                "quotaId": "GenerateRequestsPerDayPerProjectPerModel",
            }
        ],
    },
)

RESPONSE_CASES = [
    # ------------------------------------------------------------------------- OpenAI
    # BuilderIO/micro-agent#86 (message); envelope as in TheR1D/shell_gpt#653.
    case(
        "openai-429-rate-limit-try-again-in-ms",
        429,
        oai(
            "Rate limit reached for gpt-4o in organization org-uOtiSEwvUnroadaOnJJquBEC on tokens "
            "per min (TPM): Limit 30000, Used 29937, Requested 385. Please try again in 644ms.",
            "tokens",
            "rate_limit_exceeded",
        ),
        K.RATE_LIMIT,
        RETRY,
        retry_after=0.644,
    ),
    # TheR1D/shell_gpt#653: one request bigger than the whole TPM allowance.
    case(
        "openai-429-request-too-large-for-tpm",
        429,
        oai(
            "Request too large for gpt-4o in organization org-78asdf87asdf9aaa8976 on tokens per "
            "min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced "
            "in order to run successfully. Visit https://platform.openai.com/account/rate-limits "
            "to learn more.",
            "tokens",
            "rate_limit_exceeded",
        ),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # developers.openai.com/docs/guides/error-codes; MS Learn Dev Proxy "insufficient_quota".
    case(
        "openai-429-insufficient-quota",
        429,
        oai(
            "You exceeded your current quota, please check your plan and billing details. For "
            "more information on this error, read the docs: "
            "https://platform.openai.com/docs/guides/error-codes/api-errors.",
            "insufficient_quota",
            "insufficient_quota",
        ),
        K.QUOTA,
        FAIL,
    ),
    # developers.openai.com/api/docs/guides/spend-limits: hard limits answer 429 with this code
    # (message abridged).
    case(
        "openai-429-project-spend-limit",
        429,
        oai("Project spend limit exceeded.", None, "project_spend_limit_exceeded"),
        K.QUOTA,
        FAIL,
    ),
    # help.openai.com 5955604: credit_balance_exhausted (message abridged).
    case(
        "openai-429-credit-balance-exhausted",
        429,
        oai("Your credit balance is exhausted.", "insufficient_quota", "credit_balance_exhausted"),
        K.QUOTA,
        FAIL,
    ),
    # docs/openai.md#openai-errors: 429 rate_limit_error / slow_down (message abridged).
    case(
        "openai-429-slow-down",
        429,
        oai("Please slow down.", "rate_limit_error", "slow_down"),
        K.RATE_LIMIT,
        RETRY,
    ),
    # chatanywhere/GPT_API_free#62 (the key is OpenAI's own masked echo).
    case(
        "openai-401-invalid-api-key",
        401,
        '{"error":{"message":"Incorrect API key provided: sk-VKMIs***************************'
        "************wjh3. You can find your API key at "
        'https://platform.openai.com/account/api-keys.","type":"invalid_request_error",'
        '"param":null,"code":"invalid_api_key"}}',
        K.AUTH,
        FAIL,
    ),
    # developers.openai.com/docs/guides/error-codes: region block.
    case(
        "openai-403-unsupported-region",
        403,
        oai(
            "Country, region, or territory not supported",
            "request_forbidden",
            "unsupported_country_region_territory",
        ),
        K.AUTH,
        FAIL,
    ),
    # docs/openai.md#openai-errors: 404 model_not_found.
    case(
        "openai-404-model-not-found",
        404,
        oai(
            "The model `gpt-4` does not exist or you do not have access to it.",
            "invalid_request_error",
            "model_not_found",
        ),
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # docs/across-providers.md#context-overflow, docs/openai.md#openai-errors:
    # context_length_exceeded, param messages.
    case(
        "openai-400-context-length-exceeded",
        400,
        oai(
            "This model's maximum context length is 128000 tokens. However, your messages "
            "resulted in 130412 tokens. Please reduce the length of the messages.",
            "invalid_request_error",
            "context_length_exceeded",
            "messages",
        ),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # docs/across-providers.md#refusals, docs/openai.md#openai-errors (enricoros/big-AGI#712):
    # safety block on reasoning models.
    case(
        "openai-400-invalid-prompt-refusal",
        400,
        oai(
            "Invalid prompt: your prompt was flagged as potentially violating our usage policy. "
            "Please try again with a different prompt: "
            "https://platform.openai.com/docs/guides/reasoning#advice-on-prompting",
            "invalid_request_error",
            "invalid_prompt",
        ),
        K.REFUSAL,
        FATAL,
    ),
    # docs/openai.md#openai-request: max_tokens on a reasoning model.
    case(
        "openai-400-unsupported-parameter",
        400,
        oai(
            "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
            "'max_completion_tokens' instead.",
            "invalid_request_error",
            "unsupported_parameter",
            "max_tokens",
        ),
        K.BAD_REQUEST,
        FATAL,
    ),
    # docs/openai.md#openai-errors: malformed JSON body, null code.
    case(
        "openai-400-unparseable-json",
        400,
        oai(
            "We could not parse the JSON body of your request. (HINT: This likely means you "
            "aren't using your HTTP library correctly.)",
            "invalid_request_error",
            None,
        ),
        K.BAD_REQUEST,
        FATAL,
    ),
    # docs/openai.md#openai-errors: 500 server_error.
    case(
        "openai-500-server-error",
        500,
        oai(
            "The server had an error while processing your request. Sorry about that!",
            "server_error",
            None,
        ),
        K.SERVER,
        RETRY,
    ),
    # docs/openai.md#openai-errors: the legacy 503 "engine is currently overloaded".
    case(
        "openai-503-engine-overloaded",
        503,
        oai("The engine is currently overloaded, please try again later", "server_error", None),
        K.OVERLOADED,
        RETRY,
    ),
    # -------------------------------------------------------------------------- Azure
    # docs/azure.md#azure-errors: string code "429", retry-after and retry-after-ms headers.
    case(
        "azure-429-token-rate-limit",
        429,
        {
            "error": {
                "code": "429",
                "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI "
                "API version 2024-10-21 have exceeded token rate limit of your current OpenAI S0 "
                "pricing tier. Please retry after 6 seconds. Please go here: "
                "https://aka.ms/oai/quotaincrease if you would like to further increase the "
                "default rate limit.",
            }
        },
        K.RATE_LIMIT,
        RETRY,
        retry_after=6.0,
        headers={"retry-after": "6", "retry-after-ms": "6000", "x-ms-region": "East US"},
    ),
    # docs/azure.md#azure-errors: the same 429 saying "retry after 86400 seconds" (no quota
    # assigned). It stays a rate limit with its wait: the engine fails over when a day does not fit
    # the budget, and cools the deployment down for at least that long.
    case(
        "azure-429-retry-after-a-day",
        429,
        {
            "error": {
                "code": "429",
                "message": "Requests to the ChatCompletions_Create Operation under Azure OpenAI "
                "API version 2024-10-21 have exceeded call rate limit of your current OpenAI S0 "
                "pricing tier. Please retry after 86400 seconds.",
            }
        },
        K.RATE_LIMIT,
        RETRY,
        retry_after=86400.0,
    ),
    # compl-ai/compl-ai#20: prompt filtered by Azure's content management policy.
    case(
        "azure-400-content-filter-refusal",
        400,
        {
            "error": {
                "message": "The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry. To "
                "learn more about our content filtering policies please read our documentation: "
                "https://go.microsoft.com/fwlink/?linkid=2198766",
                "type": None,
                "param": "prompt",
                "code": "content_filter",
                "status": 400,
                "innererror": {
                    "code": "ResponsibleAIPolicyViolation",
                    "content_filter_result": {
                        "hate": {"filtered": False, "severity": "safe"},
                        "jailbreak": {"filtered": False, "detected": False},
                        "self_harm": {"filtered": False, "severity": "safe"},
                        "sexual": {"filtered": False, "severity": "safe"},
                        "violence": {"filtered": True, "severity": "medium"},
                    },
                },
            }
        },
        K.REFUSAL,
        FATAL,
    ),
    # BerriAI/litellm#16231: a proxy kept Azure's message but moved innererror and the code.
    case(
        "azure-via-litellm-content-filter-refusal",
        400,
        {
            "error": {
                "message": "litellm.BadRequestError: litellm.ContentPolicyViolationError: "
                "AzureException - The response was filtered due to the prompt triggering Azure "
                "OpenAI's content management policy. Please modify your prompt and retry.",
                "type": None,
                "param": None,
                "code": "400",
                "provider_specific_fields": {
                    "innererror": {"code": "ResponsibleAIPolicyViolation"}
                },
            }
        },
        K.REFUSAL,
        FATAL,
    ),
    # docs/azure.md#azure-errors: 401 with a string code.
    case(
        "azure-401-invalid-subscription-key",
        401,
        {
            "error": {
                "code": "401",
                "message": "Access denied due to invalid subscription key or wrong API endpoint. "
                "Make sure to provide a valid key for an active subscription and use a correct "
                "regional API endpoint for your resource.",
            }
        },
        K.AUTH,
        FAIL,
    ),
    # docs/azure.md#azure-errors: 404 DeploymentNotFound.
    case(
        "azure-404-deployment-not-found",
        404,
        {
            "error": {
                "code": "DeploymentNotFound",
                "message": "The API deployment for this resource does not exist. If you created "
                "the deployment within the last 5 minutes, please wait a moment and try again.",
            }
        },
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # ---------------------------------------------------------------------- Anthropic
    # platform.claude.com errors page; docs/anthropic.md#anthropic-errors: 529 overloaded_error.
    case(
        "anthropic-529-overloaded",
        529,
        anthropic("overloaded_error", "Overloaded"),
        K.OVERLOADED,
        RETRY,
    ),
    # developersdigest summary of platform.claude.com errors ("Number of request tokens has exceeded
    # your per-minute rate limit"); docs/anthropic.md#anthropic-rate-limit-headers: retry-after in
    # seconds.
    case(
        "anthropic-429-rate-limit-retry-after",
        429,
        anthropic(
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit "
            "(https://docs.anthropic.com/en/api/rate-limits); see the response headers for "
            "current usage.",
        ),
        K.RATE_LIMIT,
        RETRY,
        retry_after=17.0,
        headers={"retry-after": "17", "anthropic-ratelimit-tokens-reset": "2025-06-01T00:00:17Z"},
    ),
    # docs/across-providers.md#the-status-is-not-enough, docs/anthropic.md#anthropic-errors: the
    # monthly tier spend cap (docs give the error_code; message abridged).
    case(
        "anthropic-429-enforced-spend-limit",
        429,
        anthropic(
            "rate_limit_error",
            "Your organization has reached its usage tier's monthly cap.",
            details={"error_code": "enforced_spend_limit_reached"},
        ),
        K.QUOTA,
        FAIL,
    ),
    # docs/across-providers.md#context-overflow, docs/anthropic.md#anthropic-errors: prompt too
    # long.
    case(
        "anthropic-400-prompt-too-long",
        400,
        anthropic("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # anthropics/claude-code#867: an empty balance as a 400.
    case(
        "anthropic-400-credit-balance-too-low",
        400,
        anthropic(
            "invalid_request_error",
            "Your credit balance is too low to access the Anthropic API. Please go to Plans & "
            "Billing to upgrade or purchase credits.",
        ),
        K.QUOTA,
        FAIL,
    ),
    # platform.claude.com errors page: workspace/org spend limits are 400s.
    case(
        "anthropic-400-specified-usage-limits",
        400,
        anthropic(
            "invalid_request_error",
            "You have reached your specified workspace API usage limits. You will regain access "
            "on 2025-09-01 at 00:00 UTC.",
        ),
        K.QUOTA,
        FAIL,
    ),
    # docs/anthropic.md#anthropic-errors: a malformed request.
    case(
        "anthropic-400-roles-must-alternate",
        400,
        anthropic(
            "invalid_request_error",
            'messages: roles must alternate between "user" and "assistant", but found multiple '
            '"user" roles in a row',
        ),
        K.BAD_REQUEST,
        FATAL,
    ),
    # docs/anthropic.md#anthropic-errors: 401 authentication_error.
    case(
        "anthropic-401-invalid-x-api-key",
        401,
        anthropic("authentication_error", "invalid x-api-key"),
        K.AUTH,
        FAIL,
    ),
    # docs/anthropic.md#anthropic-errors: 402 billing_error (message abridged).
    case(
        "anthropic-402-billing-error",
        402,
        anthropic("billing_error", "There is an issue with your payment method."),
        K.QUOTA,
        FAIL,
    ),
    # docs/anthropic.md#anthropic-errors: 403 permission_error (message abridged).
    case(
        "anthropic-403-permission-error",
        403,
        anthropic("permission_error", "Your API key does not have permission to use this model."),
        K.AUTH,
        FAIL,
    ),
    # docs/anthropic.md#anthropic-errors: a retired model.
    case(
        "anthropic-404-retired-model",
        404,
        anthropic("not_found_error", "model: claude-3-5-haiku-latest"),
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # docs/across-providers.md#error-body-shapes, docs/anthropic.md#anthropic-errors: Cloudflare's
    # 413, no top-level "type".
    case(
        "anthropic-413-request-too-large-cloudflare",
        413,
        {"error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}},
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # docs/anthropic.md#anthropic-errors: 409 conflict_error is retryable (lib/_retry.py
    # _RETRYABLE_4XX). This row and the next two: types from docs/anthropic.md#anthropic-errors,
    # messages abridged.
    case(
        "anthropic-409-conflict",
        409,
        anthropic("conflict_error", "Conflict"),
        K.SERVER,
        RETRY,
    ),
    case(
        "anthropic-500-api-error",
        500,
        anthropic("api_error", "Internal server error"),
        K.SERVER,
        RETRY,
    ),
    case(
        "anthropic-504-timeout-error",
        504,
        anthropic("timeout_error", "Request timeout"),
        K.SERVER,
        RETRY,
    ),
    # ------------------------------------------------------------------------- Gemini
    # googleapis/python-genai#1875 (RetryInfo) + mscraftsman/generative-ai#131 (per-minute
    # QuotaFailure): wait what RetryInfo says.
    case(
        "gemini-429-per-minute-retry-info",
        429,
        google(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details. "
            "Please retry in 53.016342224s.",
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {
                        "quotaMetric": "generativelanguage.googleapis.com/"
                        "generate_content_paid_tier_input_token_count",
                        "quotaId": "GenerateContentPaidTierInputTokensPerModelPerMinute",
                    }
                ],
            },
            RETRY_INFO_53S,
        ),
        K.RATE_LIMIT,
        RETRY,
        retry_after=53.0,
    ),
    # langgenius/dify#19838: a per-day quota resets at midnight Pacific.
    # Per-day quotas reset at midnight Pacific: 9 h 46 m 40 s after NOW.
    case("gemini-429-per-day-quota", 429, GEMINI_PER_DAY, K.QUOTA, FAIL, retry_after=35200),
    # google-gemini/gemini-cli#8437: per-minute and per-day violations together; the day wins.
    case(
        "gemini-429-minute-and-day-violations",
        429,
        google(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            {
                "@type": "type.googleapis.com/google.rpc.QuotaFailure",
                "violations": [
                    {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"},
                    {"quotaId": "GenerateRequestsPerDayPerProjectPerModel-FreeTier"},
                ],
            },
        ),
        K.QUOTA,
        FAIL,
        retry_after=35200,  # the day's reset, at midnight Pacific
    ),
    # continuedev/continue#10062: the model has no free tier at all ("limit: 0").
    case(
        "gemini-429-limit-zero",
        429,
        google(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details. \n"
            "* Quota exceeded for metric: generativelanguage.googleapis.com/"
            "generate_content_free_tier_requests, limit: 0, model: gemini-2.5-pro\n"
            "Please retry in 20.04466179s.",
        ),
        K.QUOTA,
        FAIL,
        retry_after=20.04466179,
    ),
    # The same zero limit ending a sentence: the full stop is not a decimal point.
    case(
        "gemini-429-limit-zero-full-stop",
        429,
        google(
            429,
            "RESOURCE_EXHAUSTED",
            "Quota exceeded for metric: generativelanguage.googleapis.com/"
            "generate_content_free_tier_input_token_count, limit: 0. Please retry in 12s.",
        ),
        K.QUOTA,
        FAIL,
        retry_after=12.0,
    ),
    # A limit that is not zero (0.5 of something) is a rate limit like any other.
    case(
        "gemini-429-limit-point-five",
        429,
        google(429, "RESOURCE_EXHAUSTED", "Quota exceeded for metric: x, limit: 0.5 per second."),
        K.RATE_LIMIT,
        RETRY,
    ),
    # google-gemini/gemini-cli#14811: a one-element JSON list, no details.
    case(
        "gemini-429-list-wrapped",
        429,
        '[{\n  "error": {\n    "code": 429,\n    "message": "Resource exhausted. Please try '
        "again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/"
        'error-code-429 for more details.",\n    "status": "RESOURCE_EXHAUSTED"\n  }\n}\n]',
        K.RATE_LIMIT,
        RETRY,
    ),
    # docs/across-providers.md#bad-credentials, docs/gemini.md#gemini-errors: an invalid key is a
    # 400, not a 401.
    case(
        "gemini-400-api-key-invalid",
        400,
        google(
            400,
            "INVALID_ARGUMENT",
            "API key not valid. Please pass a valid API key.",
            {
                "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                "reason": "API_KEY_INVALID",
                "domain": "googleapis.com",
                "metadata": {"service": "generativelanguage.googleapis.com"},
            },
        ),
        K.AUTH,
        FAIL,
    ),
    # docs/across-providers.md#bad-credentials: region block.
    case(
        "gemini-400-user-location",
        400,
        google(400, "FAILED_PRECONDITION", "User location is not supported for the API use."),
        K.AUTH,
        FAIL,
    ),
    # docs/across-providers.md#context-overflow: context overflow as INVALID_ARGUMENT.
    case(
        "gemini-400-input-token-count",
        400,
        google(
            400,
            "INVALID_ARGUMENT",
            "The input token count (3475108) exceeds the maximum number of tokens allowed "
            "(1048576).",
        ),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # docs/gemini.md#gemini-request: an unknown field.
    case(
        "gemini-400-unknown-field",
        400,
        google(
            400,
            "INVALID_ARGUMENT",
            'Invalid JSON payload received. Unknown name "max_tokens": Cannot find field.',
            {"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": []},
        ),
        K.BAD_REQUEST,
        FATAL,
    ),
    # docs/gemini.md#gemini-errors: 402 prepaid credit depleted.
    case(
        "gemini-402-prepaid-credit",
        402,
        google(402, "RESOURCE_EXHAUSTED", "Your prepaid credit balance is depleted."),
        K.QUOTA,
        FAIL,
    ),
    # docs/gemini.md#gemini-errors: 403 PERMISSION_DENIED, "leaked key" among its causes (message
    # abridged).
    case(
        "gemini-403-permission-denied",
        403,
        google(403, "PERMISSION_DENIED", "Your API key was reported as leaked."),
        K.AUTH,
        FAIL,
    ),
    # docs/gemini.md#gemini-errors: 404 NOT_FOUND for a model.
    case(
        "gemini-404-model-not-found",
        404,
        google(
            404,
            "NOT_FOUND",
            "models/gemini-pro is not found for API version v1beta, or is not supported for "
            "generateContent. Call ListModels to see the list of available models and their "
            "supported methods.",
        ),
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # docs/gemini.md#gemini-errors: 500 INTERNAL, 503 UNAVAILABLE (message from the docs), 504
    # DEADLINE_EXCEEDED.
    case(
        "gemini-500-internal",
        500,
        google(500, "INTERNAL", "An internal error has occurred. Please retry or report."),
        K.SERVER,
        RETRY,
    ),
    # docs/gemini.md#gemini-errors (troubleshooting table): a 500 whose message names the input's
    # length.
    case(
        "gemini-500-input-context-too-long",
        500,
        google(500, "INTERNAL", "Your input context is too long."),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    case(
        "gemini-503-unavailable",
        503,
        google(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        K.OVERLOADED,
        RETRY,
    ),
    case(
        "gemini-504-deadline-exceeded",
        504,
        google(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete."),
        K.SERVER,
        RETRY,
    ),
    # --------------------------------------------------------------------------- vLLM
    # vllm-project/vllm#20409 (message); current envelope, int code (docs/compatible.md#vllm).
    case(
        "vllm-400-maximum-context-length",
        400,
        {
            "error": {
                "message": "This model's maximum context length is 16384 tokens. However, you "
                "requested 122946 tokens (112946 in the messages, 10000 in the completion). "
                "Please reduce the length of the messages or completion.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # vllm-project/vllm#4667; the old flat body with no "error" wrapper
    # (docs/across-providers.md#error-body-shapes).
    case(
        "vllm-old-flat-400-bad-max-tokens",
        400,
        {
            "object": "error",
            "message": "max_tokens must be at least 1, got -186.",
            "type": "BadRequestError",
            "param": None,
            "code": 400,
        },
        K.BAD_REQUEST,
        FATAL,
    ),
    # docs/compatible.md#vllm: unknown model.
    case(
        "vllm-404-model-does-not-exist",
        404,
        {
            "error": {
                "message": "The model `gpt-4` does not exist.",
                "type": "NotFoundError",
                "param": None,
                "code": 404,
            }
        },
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # ------------------------------------------------------------------------- Ollama
    # ollama openai/openai.go NewError + server/routes.go ChatHandler (docs/compatible.md#ollama).
    case(
        "ollama-404-model-not-found",
        404,
        oai("model 'llama3.9' not found", "not_found_error", None),
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # ollama server/sched.go ErrMaxQueue, native flat string error.
    case(
        "ollama-503-server-busy",
        503,
        {"error": "server busy, please try again.  maximum pending requests exceeded"},
        K.OVERLOADED,
        RETRY,
    ),
    # ollama: 499 {"error":"request canceled"}: unexplained from our side, retried.
    case("ollama-499-request-canceled", 499, {"error": "request canceled"}, K.UNKNOWN, RETRY),
    # --------------------------------------------------------------------------- Groq
    # continuedev/continue#10920: the daily token allowance (TPD) is spent.
    case(
        "groq-429-tokens-per-day",
        429,
        oai(
            "Rate limit reached for model `llama-3.3-70b-versatile` in organization "
            "`org_01kjh7p9n8f1qs6nz2bz77vy6b` service tier `on_demand` on tokens per day (TPD): "
            "Limit 100000, Used 97050, Requested 3619. Please try again in 9m38.016s. Need more "
            "tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing",
            "tokens",
            "rate_limit_exceeded",
        ),
        K.QUOTA,
        FAIL,
        retry_after=578.016,
    ),
    # ago19800/HomeMind#29: the per-minute allowance (TPM); wait and retry.
    case(
        "groq-429-tokens-per-minute",
        429,
        oai(
            "Rate limit reached for model `llama-3.3-70b-versatile` in organization "
            "`org_01kes94v04f9ramd2n1vj4gjnc` service tier `on_demand` on tokens per minute "
            "(TPM): Limit 12000, Used 2542, Requested 9855. Please try again in 1.984999999s. "
            "Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/"
            "billing",
            "tokens",
            "rate_limit_exceeded",
        ),
        K.RATE_LIMIT,
        RETRY,
        retry_after=1.984999999,
    ),
    # assafelovic/gpt-researcher#985: 413 with code rate_limit_exceeded.
    case(
        "groq-413-request-too-large",
        413,
        oai(
            "Request too large for model `llama-3.1-70b-versatile` in organization "
            "`org_01hw8f0aa0ekmrn70ffm2zkdv1` on tokens per minute (TPM): Limit 6000, Requested "
            "14368, please reduce your message size and try again. Visit "
            "https://console.groq.com/docs/rate-limits for more information.",
            "tokens",
            "rate_limit_exceeded",
        ),
        K.CONTEXT_WINDOW,
        FAIL,
    ),
    # console.groq.com/docs/errors: 498 flex tier capacity_exceeded (message abridged).
    case(
        "groq-498-flex-capacity",
        498,
        oai("Flex tier capacity exceeded.", "capacity_exceeded", "capacity_exceeded"),
        K.OVERLOADED,
        RETRY,
    ),
    # ------------------------------------------------------------------------ Mistral
    # docs/compatible.md#mistral: the flat 429.
    case(
        "mistral-429-flat-message",
        429,
        {"message": "Requests rate limit exceeded"},
        K.RATE_LIMIT,
        RETRY,
    ),
    # docs/compatible.md#mistral: the newer 429 with a non-HTTP code and raw_status_code.
    case(
        "mistral-429-code-1300",
        429,
        {
            "object": "error",
            "message": "Rate limit exceeded",
            "type": "rate_limited",
            "param": None,
            "code": "1300",
            "raw_status_code": 429,
        },
        K.RATE_LIMIT,
        RETRY,
    ),
    # docs/across-providers.md#bad-credentials, docs/compatible.md#mistral: a bare 401.
    case("mistral-401-detail-unauthorized", 401, {"detail": "Unauthorized"}, K.AUTH, FAIL),
    # mistralai/mistral-vibe#617: an unknown model is a 400 on Mistral.
    case(
        "mistral-400-invalid-model",
        400,
        {
            "object": "error",
            "message": "Invalid model: mistral-medium-3.5",
            "type": "invalid_model",
            "param": None,
            "code": "1500",
            "raw_status_code": 400,
        },
        K.MODEL_NOT_FOUND,
        FAIL,
    ),
    # Gitlawb/openclaude#739: FastAPI validation errors, "detail" is a list.
    case(
        "mistral-422-extra-inputs",
        422,
        {
            "detail": [
                {
                    "type": "extra_forbidden",
                    "loc": ["body", "store"],
                    "msg": "Extra inputs are not permitted",
                    "input": False,
                }
            ]
        },
        K.BAD_REQUEST,
        FATAL,
    ),
    # --------------------------------------------------------------------- OpenRouter
    # openrouter.ai/docs/api-reference/errors-and-debugging: 402 out of credits, int code.
    case(
        "openrouter-402-credits",
        402,
        {
            "error": {
                "code": 402,
                "message": "This request requires more credits, or fewer max_tokens. You "
                "requested up to 4000 tokens, but can only afford 1234.",
            }
        },
        K.QUOTA,
        FAIL,
    ),
    # openrouter.ai errors docs: 403 moderation, metadata reasons/flagged_input.
    case(
        "openrouter-403-moderation-refusal",
        403,
        {
            "error": {
                "code": 403,
                "message": "openai/gpt-4o requires moderation on OpenAI. Your input was flagged "
                'for "harassment". No credits were charged.',
                "metadata": {
                    "reasons": ["harassment"],
                    "flagged_input": "...",
                    "provider_name": "OpenAI",
                    "model_slug": "openai/gpt-4o",
                },
            }
        },
        K.REFUSAL,
        FATAL,
    ),
    # tailcallhq/forgecode#372: upstream Gemini error as a JSON string in metadata.raw.
    case(
        "openrouter-429-upstream-raw-list",
        429,
        {
            "error": {
                "message": "Provider returned error",
                "code": 429,
                "metadata": {
                    "raw": '[{\n  "error": {\n    "code": 429,\n    "message": "Resource '
                    "exhausted. Please try again later. Please refer to https://cloud.google.com/"
                    'vertex-ai/generative-ai/docs/error-code-429 for more details.",\n    '
                    '"status": "RESOURCE_EXHAUSTED"\n  }\n}\n]',
                    "provider_name": "Google",
                },
            }
        },
        K.RATE_LIMIT,
        RETRY,
    ),
    # docs/compatible.md#openrouter: the upstream's own rules apply to metadata.raw (here Gemini's
    # per-day quota).
    case(
        "openrouter-429-upstream-per-day",
        429,
        {
            "error": {
                "message": "Provider returned error",
                "code": 429,
                "metadata": {
                    "raw": json.dumps(GEMINI_PER_DAY),
                    "provider_name": "Google AI Studio",
                    "is_byok": True,
                },
            }
        },
        K.QUOTA,
        FAIL,
        retry_after=35200,  # Gemini's per-day reset, through OpenRouter
    ),
    # docs/compatible.md#openrouter: a non-streaming 200 whose choice failed upstream; the embedded
    # 502 decides.
    case(
        "openrouter-200-choice-error",
        200,
        {
            "id": "gen-1",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "error",
                    "error": {
                        "code": 502,
                        "message": "This model is currently experiencing high demand.",
                        "metadata": {"error_type": "provider_unavailable"},
                    },
                }
            ],
        },
        K.SERVER,
        RETRY,
    ),
    # openrouter.ai errors docs: 503 "no available model provider that meets your routing
    # requirements".
    case(
        "openrouter-503-no-provider",
        503,
        {
            "error": {
                "code": 503,
                "message": "No available model provider that meets your routing requirements.",
            }
        },
        K.OVERLOADED,
        RETRY,
    ),
    # ------------------------------------------------------------- proxies and odd shapes
    # Proxies and CDNs (docs/across-providers.md#error-body-shapes): HTML pages, "error code: 524"
    # text, empty bodies.
    case(
        "proxy-502-cloudflare-html",
        502,
        b"<!DOCTYPE html>\n<html><head><title>api.example.com | 502: Bad gateway</title></head>"
        b"<body><h1>Bad gateway</h1><p>Cloudflare Ray ID: 7d1a2b3c4d5e6f70</p></body></html>",
        K.SERVER,
        RETRY,
    ),
    case("proxy-524-plain-text", 524, b"error code: 524", K.SERVER, RETRY),
    case("proxy-503-empty-body", 503, b"", K.OVERLOADED, RETRY),
    case("proxy-500-plain-text", 500, "Internal Server Error", K.SERVER, RETRY),
    case("proxy-504-truncated-json", 504, b'{"error": {"message": "upstream ti', K.SERVER, RETRY),
    case("proxy-408-request-timeout", 408, b"", K.TIMEOUT, RETRY),
    case("proxy-520-unknown", 520, b"", K.SERVER, RETRY),
    case("odd-599-unlisted-5xx", 599, b"", K.SERVER, RETRY),
    case("odd-418-unlisted-4xx", 418, b"I'm a teapot", K.BAD_REQUEST, FATAL),
    case("odd-302-redirect", 302, b"", K.UNKNOWN, RETRY),
    case("odd-json-null", 500, b"null", K.SERVER, RETRY),
    case("odd-empty-list", 503, b"[]", K.OVERLOADED, RETRY),
]


@pytest.mark.parametrize("c", RESPONSE_CASES)
def test_classify_response(c: Case) -> None:
    failure = classify_response(c.status, c.headers, c.body, now=NOW)
    assert (failure.kind, failure.decision) == (c.kind, c.decision), failure.detail
    assert failure.status == c.status
    assert failure.retry_after == pytest.approx(c.retry_after)
    assert failure.detail
    assert "<" not in failure.detail  # no HTML or markup reaches the attempts table


@pytest.mark.parametrize("form", ["bytes", "str", "parsed"])
def test_body_may_be_bytes_text_or_parsed_json(form: str) -> None:
    body: object = GEMINI_PER_DAY
    if form != "parsed":
        body = json.dumps(GEMINI_PER_DAY)
        if form == "bytes":
            body = body.encode()
    failure = classify_response(429, {}, body, now=NOW)
    assert failure.kind is K.QUOTA


# ----------------------------------------------------------------------- x-should-retry


@pytest.mark.parametrize(
    ("status", "body", "header", "kind", "decision"),
    [
        # docs/across-providers.md#x-should-retry: the Stainless SDKs honour the header before any
        # status rule.
        pytest.param(
            400,
            anthropic("invalid_request_error", "Transient validation failure"),
            "true",
            K.BAD_REQUEST,
            RETRY,
            id="true-makes-a-400-retryable",
        ),
        pytest.param(
            401,
            {"detail": "Unauthorized"},
            "true",
            K.AUTH,
            RETRY,
            id="true-beats-a-status-guess",
        ),
        pytest.param(
            500, anthropic("api_error", "Internal"), "false", K.SERVER, FAIL, id="false-on-5xx"
        ),
        pytest.param(
            429,
            anthropic("rate_limit_error", "Rate limited"),
            "false",
            K.RATE_LIMIT,
            FAIL,
            id="false-on-429",
        ),
        pytest.param(
            529, anthropic("overloaded_error", "Overloaded"), "TRUE", K.OVERLOADED, RETRY, id="case"
        ),
        pytest.param(
            401,
            anthropic("authentication_error", "invalid x-api-key"),
            "false",
            K.AUTH,
            FAIL,
            id="false-leaves-fail-over",
        ),
        pytest.param(
            400,
            anthropic("invalid_request_error", "messages: text content blocks must be non-empty"),
            "false",
            K.BAD_REQUEST,
            FATAL,
            id="false-leaves-fatal",
        ),
        # The body's own diagnosis is not overridden: the same input meets the same verdict.
        pytest.param(
            400,
            anthropic(
                "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
            ),
            "true",
            K.CONTEXT_WINDOW,
            FAIL,
            id="true-does-not-retry-context-overflow",
        ),
        pytest.param(
            400,
            oai("Invalid prompt: flagged.", "invalid_request_error", "invalid_prompt"),
            "true",
            K.REFUSAL,
            FATAL,
            id="true-does-not-retry-a-refusal",
        ),
        pytest.param(
            429,
            oai("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
            "true",
            K.QUOTA,
            FAIL,
            id="true-does-not-retry-exhausted-quota",
        ),
    ],
)
def test_x_should_retry(
    status: int, body: object, header: str, kind: ErrorKind, decision: Decision
) -> None:
    failure = classify_response(status, {"X-Should-Retry": header}, body, now=NOW)
    assert (failure.kind, failure.decision) == (kind, decision)


# ------------------------------------------------------------------------- retry timing


def test_header_wait_beats_the_body() -> None:
    body = {"error": {"code": "429", "message": "... Please retry after 6 seconds."}}
    failure = classify_response(429, httpx.Headers({"Retry-After": "10"}), body, now=NOW)
    assert failure.retry_after == 10.0


def test_retry_after_http_date_is_relative_to_now() -> None:
    # 1_700_000_000 is Tue, 14 Nov 2023 22:13:20 GMT.
    headers = {"retry-after": "Tue, 14 Nov 2023 22:13:50 GMT"}
    assert classify_response(503, headers, b"", now=NOW).retry_after == 30.0
    assert classify_response(503, headers, b"", now=NOW + 10).retry_after == 20.0


def test_retry_after_ms_header() -> None:
    failure = classify_response(429, {"retry-after-ms": "644"}, b"", now=NOW)
    assert failure.retry_after == pytest.approx(0.644)


def test_a_long_wait_on_a_rate_limit_stays_a_rate_limit() -> None:
    # The engine, not the classifier, decides that two hours do not fit a 30 s budget.
    failure = classify_response(
        429, {"retry-after": "7200"}, anthropic("rate_limit_error", "x"), now=NOW
    )
    assert (failure.kind, failure.decision, failure.retry_after) == (K.RATE_LIMIT, RETRY, 7200.0)


# ------------------------------------------------------------------------------- detail


def test_detail_names_status_code_message_and_wait() -> None:
    failure = classify_response(
        429,
        {"retry-after-ms": "600"},
        oai(
            "Rate limit reached for gpt-4o in organization org-x on tokens per min (TPM).",
            "tokens",
            "rate_limit_exceeded",
        ),
        now=NOW,
    )
    assert failure.detail == (
        "429 rate_limit_exceeded: Rate limit reached for gpt-4o in organization org-x on tokens "
        "per min (TPM). (retry after 0.6 s)"
    )


def test_detail_of_an_upstream_error_includes_the_upstream_message() -> None:
    body = {
        "error": {
            "message": "Provider returned error",
            "code": 429,
            "metadata": {"raw": json.dumps(GEMINI_PER_DAY)},
        }
    }
    detail = classify_response(429, {}, body, now=NOW).detail
    assert detail.startswith("429 ")
    assert "Provider returned error: You exceeded your current quota" in detail


def test_detail_is_short_and_single_line() -> None:
    message = "Something went wrong.\n" + "x" * 5000
    detail = classify_response(500, {}, oai(message, "server_error", None), now=NOW).detail
    assert "\n" not in detail
    assert len(detail) <= DETAIL_MESSAGE_LIMIT + len("500 server_error: ")
    assert detail.endswith("…")


def test_detail_of_an_html_page_is_its_title_not_its_markup() -> None:
    body = b"<html><head><title>504 Gateway Time-out</title></head><body>nginx</body></html>"
    assert classify_response(504, {}, body, now=NOW).detail == (
        "504: HTML page from a proxy: 504 Gateway Time-out"
    )


def test_detail_of_an_empty_body_says_so() -> None:
    assert classify_response(503, {}, b"  ", now=NOW).detail == "503 (empty body)"


def test_detail_never_holds_header_values() -> None:
    headers = {
        "x-request-id": "req_8a9f7c2e1b",
        "openai-organization": "org-secretname",
        "retry-after": "2",
    }
    detail = classify_response(500, headers, oai("Boom", "server_error", None), now=NOW).detail
    assert "req_8a9f7c2e1b" not in detail
    assert "org-secretname" not in detail
    assert detail.endswith("(retry after 2 s)")


SECRETS = [
    # chatanywhere/GPT_API_free#62: OpenAI echoes a masked key.
    pytest.param("sk-VKMIs***************************************wjh3", id="openai-masked"),
    pytest.param("sk-proj-AbCdEf0123456789_abcdefGHIJ-klmn", id="openai-project"),
    pytest.param("sk-ant-api03-AbCdEf0123456789abcdef-XYZ", id="anthropic"),
    pytest.param("sk-or-v1-0123456789abcdef0123456789abcdef", id="openrouter"),
    pytest.param("AIzaSyD-0123456789abcdefghijklmnopqrstu", id="google"),
    pytest.param("gsk_0123456789abcdefghijABCDEFGHIJ", id="groq"),
    pytest.param("0123456789abcdef0123456789abcdef", id="azure-hex"),
]


@pytest.mark.parametrize("secret", SECRETS)
def test_detail_redacts_keys(secret: str) -> None:
    body = oai(
        f"Incorrect API key provided: {secret}. You can find your API key at ...", None, None
    )
    failure = classify_response(401, {}, body, now=NOW)
    assert secret not in failure.detail
    assert secret[6:14] not in failure.detail  # not even a fragment
    assert PLACEHOLDER in failure.detail


# ------------------------------------------------------------------------ stream errors

STREAM_CASES = [
    # anthropic-sdk tests/test_streaming.py test_error_type; platform.claude.com streaming docs.
    pytest.param(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        K.OVERLOADED,
        None,
        id="anthropic-overloaded",
    ),
    pytest.param(
        '{"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}',
        K.SERVER,
        None,
        id="anthropic-api-error-raw-text",
    ),
    pytest.param(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}},
        K.RATE_LIMIT,
        None,
        id="anthropic-rate-limit",
    ),
    pytest.param(
        {"type": "error", "error": {"type": "timeout_error", "message": "Request timeout"}},
        K.TIMEOUT,
        None,
        id="anthropic-timeout",
    ),
    # sashabaranov/go-openai#396 (docs/openai.md#openai-stream): OpenAI Chat mid-stream error.
    pytest.param(
        oai(
            "The server had an error processing your request. Sorry about that! You can retry "
            "your request, or contact us through our help center at help.openai.com if you keep "
            "seeing this error.",
            "server_error",
            None,
        ),
        K.SERVER,
        None,
        id="openai-server-error",
    ),
    # docs/gemini.md#gemini-stream: Gemini mid-stream error; its code is kept as the status.
    pytest.param(
        google(503, "UNAVAILABLE", "The model is overloaded. Please try again later."),
        K.OVERLOADED,
        503,
        id="gemini-unavailable",
    ),
    # docs/compatible.md#openrouter: OpenRouter chunk with a top-level error and finish_reason
    # "error".
    pytest.param(
        {
            "id": "gen-1",
            "object": "chat.completion.chunk",
            "error": {"code": 502, "message": "Provider disconnected"},
            "choices": [{"index": 0, "delta": {"content": ""}, "finish_reason": "error"}],
        },
        K.SERVER,
        502,
        id="openrouter-chunk-error",
    ),
    # docs/openai.md#openai-responses-api: Responses `response.failed` seen in a public fixture.
    pytest.param(
        {
            "type": "response.failed",
            "response": {
                "status": "failed",
                "error": {
                    "code": "server_is_overloaded",
                    "message": "Selected model is at capacity. Please try a different model.",
                },
            },
        },
        K.OVERLOADED,
        None,
        id="openai-responses-failed",
    ),
    # docs/openai.md#openai-responses-api: Responses `error` event
    # (types/responses/response_error_event.py).
    pytest.param(
        {
            "type": "error",
            "code": "rate_limit_exceeded",
            "message": "Rate limit reached. Please try again in 20ms.",
            "param": None,
            "sequence_number": 4,
        },
        K.RATE_LIMIT,
        None,
        id="openai-responses-error-event",
    ),
    # docs/compatible.md#vllm: an old vLLM stream error, wrapped twice.
    pytest.param(
        {
            "error": {
                "object": "error",
                "message": "This model's maximum context length is 4096 tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        K.CONTEXT_WINDOW,
        400,
        id="vllm-context",
    ),
    # Oaklight/argo-proxy#91: Azure's content filter relayed inside a stream chunk.
    pytest.param(
        {
            "error": {
                "message": "Error code: 400 - {'error': {'message': 'The response was filtered "
                "due to the prompt triggering Azure OpenAI's content management policy.', "
                "'code': 'content_filter'}}"
            }
        },
        K.REFUSAL,
        None,
        id="azure-filter-via-proxy",
    ),
    pytest.param("data that is not json", K.UNKNOWN, None, id="garbage"),
]


@pytest.mark.parametrize(("payload", "kind", "status"), STREAM_CASES)
def test_classify_stream_error(payload: object, kind: ErrorKind, status: int | None) -> None:
    failure = classify_stream_error(payload, now=NOW)
    assert failure.kind is kind, failure.detail
    assert failure.decision is TABLE[kind].decision
    assert failure.status == status  # never the stream's 200


def test_stream_error_keeps_its_wait() -> None:
    payload = google(
        429, "RESOURCE_EXHAUSTED", "Quota exceeded. Please retry in 26.5s.", RETRY_INFO_53S
    )
    assert classify_stream_error(payload, now=NOW).retry_after == 53.0


# ------------------------------------------------------------------- transport exceptions


def _chained(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


EXCEPTION_CASES = [
    pytest.param(httpx.ConnectTimeout("timed out"), K.TIMEOUT, "connect timeout", id="connect-to"),
    pytest.param(httpx.ReadTimeout("The read operation timed out"), K.TIMEOUT, "read", id="read"),
    pytest.param(httpx.WriteTimeout(""), K.TIMEOUT, "write timeout", id="write-timeout"),
    pytest.param(httpx.PoolTimeout(""), K.TIMEOUT, "connection pool timeout", id="pool-timeout"),
    pytest.param(
        httpx.ConnectError("[Errno 111] Connection refused"),
        K.NETWORK,
        "connection refused",
        id="refused",
    ),
    pytest.param(
        httpx.ConnectError("[Errno -2] Name or service not known"),
        K.NETWORK,
        "DNS lookup failed",
        id="dns-linux",
    ),
    pytest.param(
        httpx.ConnectError("[Errno 8] nodename nor servname provided, or not known"),
        K.NETWORK,
        "DNS lookup failed",
        id="dns-macos",
    ),
    pytest.param(
        httpx.ConnectError(
            "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self-signed certificate "
            "in certificate chain (_ssl.c:1006)"
        ),
        K.NETWORK,
        "TLS error",
        id="tls",
    ),
    pytest.param(
        _chained(
            httpx.ConnectError(""), socket.gaierror(-3, "Temporary failure in name resolution")
        ),
        K.NETWORK,
        "DNS lookup failed",
        id="dns-in-cause",
    ),
    pytest.param(
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        K.NETWORK,
        "the server closed the connection",
        id="server-disconnected",
    ),
    pytest.param(
        httpx.RemoteProtocolError(
            "peer closed connection without sending complete message body (incomplete chunked read)"
        ),
        K.NETWORK,
        "the server closed the connection",
        id="peer-closed",
    ),
    pytest.param(
        httpx.ReadError("[Errno 104] Connection reset by peer"),
        K.NETWORK,
        "connection reset",
        id="reset",
    ),
    pytest.param(
        ConnectionRefusedError(111, "Connection refused"), K.NETWORK, "connection refused", id="os"
    ),
    pytest.param(socket.gaierror(-2, "Name or service not known"), K.NETWORK, "DNS", id="gaierr"),
    pytest.param(
        ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify"),
        K.NETWORK,
        "TLS error",
        id="ssl-module",
    ),
    pytest.param(TimeoutError("timed out"), K.TIMEOUT, "timeout", id="builtin-timeout"),
    pytest.param(
        json.JSONDecodeError("Expecting value", "data: {oops", 6),
        K.SERVER,
        "malformed response",
        id="bad-json-chunk",
    ),
    pytest.param(RuntimeError("something odd"), K.UNKNOWN, "unexpected RuntimeError", id="other"),
]


@pytest.mark.parametrize(("exc", "kind", "detail_start"), EXCEPTION_CASES)
def test_classify_exception(exc: BaseException, kind: ErrorKind, detail_start: str) -> None:
    failure = classify_exception(exc)
    assert failure.kind is kind
    assert failure.decision is TABLE[kind].decision
    assert failure.detail.startswith(detail_start), failure.detail
    assert failure.status is None


def test_classify_exception_survives_a_broken_str() -> None:
    class Broken(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    failure = classify_exception(Broken())
    assert failure.kind is K.UNKNOWN
    assert failure.detail == "unexpected Broken"


def test_classify_exception_redacts_keys() -> None:
    exc = httpx.LocalProtocolError("Illegal header value b'Bearer sk-proj-abc123DEF456ghi789\\n'")
    failure = classify_exception(exc)
    assert "abc123DEF456" not in failure.detail
    assert failure.kind is K.UNKNOWN


@pytest.fixture
def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_real_connection_refused_on_loopback(closed_port: int) -> None:
    with pytest.raises(httpx.ConnectError) as info:
        httpx.get(f"http://127.0.0.1:{closed_port}/", timeout=2)
    failure = classify_exception(info.value)
    assert (failure.kind, failure.decision) == (K.NETWORK, RETRY)
    assert failure.detail.startswith("connection refused")


@pytest.fixture
def hang_up_server() -> Iterator[int]:
    """A loopback server that reads the request and closes without answering."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port: int = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        conn.recv(65536)
        conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield port
    thread.join(timeout=2)
    server.close()


def test_real_server_disconnect_on_loopback(hang_up_server: int) -> None:
    with pytest.raises(httpx.TransportError) as info:
        httpx.get(f"http://127.0.0.1:{hang_up_server}/", timeout=2)
    failure = classify_exception(info.value)
    assert (failure.kind, failure.decision) == (K.NETWORK, RETRY)


# ------------------------------------------------------------------------------ the cases


def test_the_cases_exercise_every_kind() -> None:
    seen = {p.values[0].kind for p in RESPONSE_CASES}
    seen |= {p.values[1] for p in STREAM_CASES}
    seen |= {p.values[1] for p in EXCEPTION_CASES}
    # Those read from a 200's answer are not the classifier's to find.
    assert seen == set(ErrorKind) - {k for k, row in TABLE.items() if row.from_answer}


def test_the_cases_cover_every_provider() -> None:
    providers = {p.id.split("-")[0] for p in RESPONSE_CASES}
    assert {
        "openai",
        "azure",
        "anthropic",
        "gemini",
        "vllm",
        "ollama",
        "groq",
        "mistral",
        "openrouter",
        "proxy",
    } <= providers


def test_failure_is_the_models_record() -> None:
    failure = classify_response(500, {}, b"", now=NOW)
    assert isinstance(failure, Failure)


# A question that goes well classifies nothing, and one that fails imports this module to
# classify a reply or two: the import must compile none of the rules' regexes and load no
# httpx (an offline `local` question never needs it). Checked in a fresh interpreter, with
# `re.compile` counting the calls made from gateway.classify.errors and its rules.
_IMPORT_PROBE = """
import re, sys
import gateway.model, gateway.classify.retry_after  # compiled by their own modules: not counted
real_compile = re.compile
CLASSIFIER = ("gateway.classify.errors", "gateway.classify.rules")
calls = []
def counting(pattern, flags=0):
    if sys._getframe(1).f_globals.get("__name__") in CLASSIFIER:
        calls.append(pattern)
    return real_compile(pattern, flags)
re.compile = counting
import gateway.classify.errors as errors
print(len(calls), "httpx" in sys.modules)
failure = errors.classify_response(400, {}, b'{"error": {"code": "content_filter"}}', now=0)
print(len(calls) > 0, failure.kind)
"""


def test_importing_the_classifier_compiles_no_regex_and_loads_no_httpx() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _IMPORT_PROBE], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    at_import, on_first_use = done.stdout.splitlines()
    assert at_import == "0 False"
    # The tables are built on first use, and still classify.
    assert on_first_use == "True refusal"


# -------------------------------------------------- when an exhausted quota comes back


QUOTA_BODY = oai("You exceeded your current quota.", "insufficient_quota", "insufficient_quota")


@pytest.mark.parametrize(
    ("headers", "body", "seconds"),
    [
        pytest.param({}, QUOTA_BODY, None, id="nothing-said"),
        pytest.param(
            {"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "6m0s"},
            QUOTA_BODY,
            360.0,
            id="openai-reset-headers-the-longest",
        ),
        pytest.param(
            {"anthropic-ratelimit-tokens-reset": "2023-11-14T23:13:20Z"},  # NOW + 1 h
            {"type": "error", "error": {"type": "billing_error", "message": "billing"}},
            3600.0,
            id="anthropic-rfc3339-reset",
        ),
        pytest.param(
            {},
            oai("Your quota resets in 3 hours.", "insufficient_quota", "insufficient_quota"),
            10800.0,
            id="resets-in-words",
        ),
    ],
)
def test_a_quota_failure_carries_the_reset_the_provider_named(
    headers: dict[str, str], body: object, seconds: float | None
) -> None:
    failure = classify_response(429, headers, body, now=NOW)
    assert failure.kind is ErrorKind.QUOTA
    assert failure.retry_after == seconds


def test_a_gemini_per_day_quota_resets_at_midnight_pacific() -> None:
    # 2023-11-14 22:13:20 UTC is 14:13:20 in California: 9 h 46 m 40 s to midnight there.
    failure = classify_response(429, {}, GEMINI_PER_DAY, now=NOW)
    assert failure.kind is ErrorKind.QUOTA
    assert failure.retry_after == 9 * 3600 + 46 * 60 + 40


def test_reset_headers_do_not_lengthen_a_rate_limit() -> None:
    body = oai("Rate limit reached", "requests", "rate_limit_exceeded")
    failure = classify_response(429, {"x-ratelimit-reset-tokens": "6m0s"}, body, now=NOW)
    assert failure.kind is ErrorKind.RATE_LIMIT and failure.retry_after is None
