"""Fixtures for batch tests: the task-writing model (repositories: tests/support/batch_tasks)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.batch_model import TaskModel


@pytest.fixture
def task_model() -> Iterator[TaskModel]:
    with TaskModel() as server:
        yield server


@pytest.fixture
def model_env(
    task_model: TaskModel, monkeypatch: pytest.MonkeyPatch, fresh_providers: None
) -> TaskModel:
    for key, value in task_model.env().items():
        monkeypatch.setenv(key, value)
    return task_model
