"""The multi-node fault suite (`make test-cluster`): see conftest.py."""
