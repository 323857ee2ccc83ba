"""Provider faults as the host shows them: retries said at once, a missing endpoint as a setting.

The core retries provider calls quietly (the run's events do not change, only the retried
turn's ``OutputDiscarded``); without a notice the user watches up to half a minute of backoff
in silence. The host hooks the policy's ``on_retry`` for each run and emits ``model.retrying``
before the wait.

The core counts every 5xx as passing (the spec's retryable statuses are 408, 429 and 500-599),
so a run whose last error is HTTP 501 would end ``interrupted``, inviting a resume that cannot
help: 501 Not Implemented means the base URL does not serve this API. The host ends such a run
``failed`` instead, with the provider's hint naming the setting.
"""

from __future__ import annotations

import time
from dataclasses import replace

from lovia.exceptions import LoviaError, ProviderError
from lovia.reliability import RetryNotice, RetryPolicy
from lovia_server.host.run_controller import RunController
from lovia_server.protocol import ModelRetrying


def retry_notice_payload(ctl: RunController, notice: RetryNotice) -> ModelRetrying:
    """The wire form of one retry of the run's current model call."""
    error = notice.error
    return ModelRetrying(
        message_id=ctl.stream.message_id,
        attempt=notice.attempt,
        max_attempts=notice.max_attempts,
        delay_ms=round(notice.delay * 1000),
        retry_at=int((time.time() + notice.delay) * 1000),
        reason=notice.reason,
        status_code=error.status_code if isinstance(error, ProviderError) else None,
        hint=error.hint if isinstance(error, LoviaError) else None,
    )


def announced_retries(ctl: RunController, policy: RetryPolicy | None) -> RetryPolicy | None:
    """The run's retry policy, also telling the run's stream of each retry.

    ``None`` (no retries) stays ``None``; a listener the agent's own policy has still hears
    every retry, after the stream was told."""
    if policy is None:
        return None
    own = policy.on_retry

    def told(notice: RetryNotice) -> None:
        ctl.log.emit(retry_notice_payload(ctl, notice))
        if own is not None:
            own(notice)

    return replace(policy, on_retry=told)


SETTING_STATUSES = frozenset({501})
"""Statuses the core retries that only a configuration change can fix."""


def needs_a_setting(error: BaseException) -> bool:
    """True when the run failed because of where it was pointed, not a passing fault."""
    return isinstance(error, ProviderError) and error.status_code in SETTING_STATUSES


__all__ = ["SETTING_STATUSES", "announced_retries", "needs_a_setting", "retry_notice_payload"]
