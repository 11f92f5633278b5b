import unittest

from collectiveattr_torch import config
from collectiveattr_torch.config import ConfigError


class SettingsTest(unittest.TestCase):
    def test_defaults(self):
        s = config.settings({})
        self.assertTrue(s.enabled)
        self.assertEqual(s.traces_url, "http://localhost:4318/v1/traces")
        self.assertEqual(s.metrics_url, "http://localhost:4318/v1/metrics")
        self.assertEqual((s.sample_interval, s.export_interval, s.timeout, s.queue_size), (0.1, 1.0, 2.0, 65536))
        self.assertTrue(s.nccl_accounting)

    def test_endpoint_precedence(self):
        env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318/",
               "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:9/custom"}
        s = config.settings(env)
        self.assertEqual(s.traces_url, "http://traces:9/custom")
        self.assertEqual(s.metrics_url, "http://collector:4318/v1/metrics")
        s = config.settings(env, endpoint="http://arg:1")
        self.assertEqual((s.traces_url, s.metrics_url), ("http://arg:1/v1/traces", "http://arg:1/v1/metrics"))

    def test_environment_and_arguments(self):
        env = {"COLLECTIVEATTR_SAMPLE_INTERVAL": "0.05", "COLLECTIVEATTR_QUEUE_SIZE": "10",
               "OTEL_EXPORTER_OTLP_TIMEOUT": "500", "OTEL_EXPORTER_OTLP_HEADERS": "a=1,b=x%20y",
               "COLLECTIVEATTR_NCCL_ACCOUNTING": "false", "COLLECTIVEATTR_DISABLED": "1"}
        s = config.settings(env)
        self.assertEqual((s.sample_interval, s.queue_size, s.timeout), (0.05, 10, 0.5))
        self.assertEqual(s.headers, {"a": "1", "b": "x y"})
        self.assertFalse(s.nccl_accounting)
        self.assertFalse(s.enabled)
        s = config.settings(env, sample_interval=0.5, timeout=3, headers={"a": "2"})
        self.assertEqual((s.sample_interval, s.timeout, s.headers["a"]), (0.5, 3.0, "2"))

    def test_errors_name_the_setting(self):
        cases = [
            ({"COLLECTIVEATTR_SAMPLE_INTERVAL": "fast"}, {}, "COLLECTIVEATTR_SAMPLE_INTERVAL"),
            ({"COLLECTIVEATTR_SAMPLE_INTERVAL": "0"}, {}, "COLLECTIVEATTR_SAMPLE_INTERVAL"),
            ({}, {"sample_interval": -1}, "sample_interval"),
            ({"COLLECTIVEATTR_QUEUE_SIZE": "0"}, {}, "COLLECTIVEATTR_QUEUE_SIZE"),
            ({"COLLECTIVEATTR_DISABLED": "maybe"}, {}, "COLLECTIVEATTR_DISABLED"),
            ({"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"}, {}, "endpoint"),
            ({"OTEL_EXPORTER_OTLP_TIMEOUT": "-5"}, {}, "OTEL_EXPORTER_OTLP_TIMEOUT"),
        ]
        for env, kw, name in cases:
            with self.assertRaises(ConfigError) as cm:
                config.settings(env, **kw)
            self.assertIn(name, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
