import datetime
import os
import tempfile
import unittest

from collectiveattr_torch import identity


class JobIdTest(unittest.TestCase):
    def test_precedence(self):
        full = {
            "COLLECTIVEATTR_JOB_ID": "explicit-env",
            "OTEL_RESOURCE_ATTRIBUTES": "training.job.id=otel-job,k8s.job.name=k8s-otel",
            "TORCHELASTIC_RUN_ID": "elastic-run",
            "SLURM_JOB_ID": "4242",
            "K8S_JOB_NAME": "k8s-env",
        }
        # Remove the winner one by one: each step must fall to the next source.
        order = [
            ("explicit-env", "COLLECTIVEATTR_JOB_ID", "COLLECTIVEATTR_JOB_ID"),
            ("otel-job", "training.job.id", None),
            ("elastic-run", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RUN_ID"),
            ("4242", "SLURM_JOB_ID", "SLURM_JOB_ID"),
            ("k8s-otel", "k8s.job.name", "OTEL_RESOURCE_ATTRIBUTES"),
            ("k8s-env", "K8S_JOB_NAME", "K8S_JOB_NAME"),
            ("", "none", None),
        ]
        env = dict(full)
        for want, source, remove in order:
            self.assertEqual(identity.resolve_job_id(env), (want, source), env)
            if want == "otel-job":
                env["OTEL_RESOURCE_ATTRIBUTES"] = "k8s.job.name=k8s-otel"
            elif remove:
                del env[remove]
        self.assertEqual(identity.resolve_job_id(full, explicit="arg"), ("arg", "argument"))

    def test_torchrun_default_run_id_is_no_job(self):
        env = {"TORCHELASTIC_RUN_ID": "none", "SLURM_JOB_ID": "77"}
        self.assertEqual(identity.resolve_job_id(env), ("77", "SLURM_JOB_ID"))

    def test_slurm_array_task_is_its_own_job(self):
        env = {"SLURM_JOB_ID": "101", "SLURM_ARRAY_JOB_ID": "100", "SLURM_ARRAY_TASK_ID": "1"}
        self.assertEqual(identity.resolve_job_id(env), ("100_1", "SLURM_JOB_ID"))

    def test_blank_values_are_absent(self):
        self.assertEqual(identity.resolve_job_id({"COLLECTIVEATTR_JOB_ID": "  ", "SLURM_JOB_ID": "5"}), ("5", "SLURM_JOB_ID"))


class ResourceTest(unittest.TestCase):
    def test_otel_resource_attributes(self):
        self.assertEqual(identity.parse_otel_resource_attributes("a=1, b = x%2Cy ,bad,=v,c="),
                         {"a": "1", "b": "x,y", "c": ""})

    def test_physical_gpu_index(self):
        self.assertEqual(identity.physical_gpu_index({}, 1), 1)
        self.assertEqual(identity.physical_gpu_index({"CUDA_VISIBLE_DEVICES": "4,6"}, 1), 6)
        self.assertIsNone(identity.physical_gpu_index({"CUDA_VISIBLE_DEVICES": "GPU-abc"}, 0))
        self.assertIsNone(identity.physical_gpu_index({"CUDA_VISIBLE_DEVICES": "4"}, 1))
        self.assertIsNone(identity.physical_gpu_index({}, None))

    def test_rank_resource(self):
        env = {"LOCAL_RANK": "3", "CUDA_VISIBLE_DEVICES": "2,3,4,5", "K8S_NODE_NAME": "node-7",
               "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=prod,training.rank=99"}
        got = identity.resource_attributes(env, rank=11, world_size=16, job_id="j1", cuda_index=3,
                                           gpu_uuid="GPU-x", pid=123, process_start="2026-01-01T00:00:00.000Z")
        self.assertEqual(got["training.job.id"], "j1")
        self.assertEqual(got["training.rank"], 11)  # torch.distributed wins over the variable
        self.assertEqual(got["training.world_size"], 16)
        self.assertEqual(got["training.local_rank"], 3)
        self.assertEqual(got["host.name"], "node-7")  # dcgm-exporter's host is the node
        self.assertEqual(got["k8s.node.name"], "node-7")
        self.assertEqual(got["gpu.index"], 5)
        self.assertEqual(got["gpu.uuid"], "GPU-x")
        self.assertEqual(got["process.pid"], 123)
        self.assertEqual(got["process.creation.time"], "2026-01-01T00:00:00.000Z")
        self.assertEqual(got["deployment.environment"], "prod")
        self.assertEqual(got["service.name"], "pytorch-training")

    def test_process_creation_time_from_proc(self):
        with tempfile.TemporaryDirectory() as proc:
            os.mkdir(os.path.join(proc, "123"))
            fields = ["S"] + ["0"] * 18 + [str(2500 * os.sysconf("SC_CLK_TCK"))] + ["0"] * 30
            with open(os.path.join(proc, "123", "stat"), "w") as f:
                f.write("123 (python3 (a) b) " + " ".join(fields) + "\n")
            with open(os.path.join(proc, "stat"), "w") as f:
                f.write("cpu  1 2 3\nbtime 1767225600\nprocesses 9\n")
            self.assertEqual(identity.process_creation_time(123, proc=proc), "2026-01-01T00:41:40.000Z")

    def test_process_creation_time_without_proc(self):
        with tempfile.TemporaryDirectory() as proc:
            got = identity.process_creation_time(123, proc=proc)
        want = datetime.datetime.fromtimestamp(identity._IMPORTED_AT, datetime.timezone.utc)
        self.assertEqual(got, want.isoformat(timespec="milliseconds").replace("+00:00", "Z"))

    def test_own_process_creation_time_is_stable(self):
        got = identity.resource_attributes({}, rank=0, world_size=1, host="h")
        self.assertEqual(got["process.pid"], os.getpid())
        self.assertRegex(got["process.creation.time"], r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertEqual(got["process.creation.time"], identity.process_creation_time())

    def test_no_job_sends_no_job_attribute(self):
        got = identity.resource_attributes({}, rank=0, world_size=1, host="h")
        self.assertNotIn("training.job.id", got)
        self.assertNotIn("gpu.index", got)
        self.assertEqual(got["host.name"], "h")


if __name__ == "__main__":
    unittest.main()
