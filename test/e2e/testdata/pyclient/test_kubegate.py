"""kubegate up, used through the official Python client (kubernetes).

Each test is a kind of work a user of the client does: create objects
from manifests (APIServices among them), manage pods and wait for them
through a watch, use the dynamic client and its discovery, patch, and
page through lists. The kubeconfig is $KUBECONFIG; every test works in
a namespace of its own.
"""

import os
import unittest
import uuid

from kubernetes import client, config, dynamic, utils, watch
from kubernetes.client.rest import ApiException

config.load_kube_config(config_file=os.environ["KUBECONFIG"])


def new_namespace(api):
    name = "py-" + uuid.uuid4().hex[:8]
    api.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    return name


def pod(name, labels=None):
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name, labels=labels or {}),
        spec=client.V1PodSpec(containers=[client.V1Container(name="app", image="example.com/app:1")]))


class KubegateThroughPython(unittest.TestCase):
    def setUp(self):
        self.api = client.ApiClient()
        self.core = client.CoreV1Api(self.api)
        self.ns = new_namespace(self.core)

    def tearDown(self):
        self.core.delete_namespace(self.ns)
        self.api.close()

    def test_create_from_yaml_makes_every_kind(self):
        objs = utils.create_from_dict(self.api, {
            "apiVersion": "v1", "kind": "List", "items": [
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}},
                {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                 "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}},
                {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
                 "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                          "template": {"metadata": {"labels": {"app": "web"}},
                                       "spec": {"containers": [{"name": "web", "image": "example.com/web:1"}]}}}},
                {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "reader"},
                 "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}]},
            ]}, namespace=self.ns)
        self.assertEqual(4, len(objs))
        self.assertEqual("1", self.core.read_namespaced_config_map("settings", self.ns).data["a"])
        svc = self.core.read_namespaced_service("web", self.ns)
        self.assertTrue(svc.spec.cluster_ip)
        self.assertEqual(2, client.AppsV1Api(self.api).read_namespaced_deployment("web", self.ns).spec.replicas)
        self.assertEqual(["get", "list"], client.RbacAuthorizationV1Api(self.api).read_namespaced_role("reader", self.ns).rules[0].verbs)

    def test_create_from_yaml_makes_an_apiservice(self):
        name = "v1alpha1.py%s.example.com" % self.ns[3:]
        utils.create_from_dict(self.api, {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": name},
            "spec": {"group": name.split(".", 1)[1], "version": "v1alpha1", "insecureSkipTLSVerify": True,
                     "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {"name": "api", "namespace": self.ns}}})
        regs = client.ApiregistrationV1Api(self.api)
        try:
            got = regs.read_api_service(name)
            self.assertEqual(443, got.spec.service.port)
            self.assertEqual(1000, got.spec.group_priority_minimum)
        finally:
            regs.delete_api_service(name)

    def test_create_from_yaml_reports_failures(self):
        with self.assertRaises(utils.FailToCreateError) as cm:
            utils.create_from_dict(self.api, {
                "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Not_A_Name"}}, namespace=self.ns)
        self.assertEqual(422, cm.exception.api_exceptions[0].status)

    def test_pods_are_watched_until_running(self):
        # A new namespace's default service account, which admission
        # needs for a pod, comes from a controller, soon after it.
        w = watch.Watch()
        for event in w.stream(self.core.list_namespaced_service_account, self.ns,
                              field_selector="metadata.name=default", timeout_seconds=60):
            w.stop()
        w = watch.Watch()
        self.core.create_namespaced_pod(self.ns, pod("one", {"app": "one"}))
        phase = None
        for event in w.stream(self.core.list_namespaced_pod, self.ns, label_selector="app=one", timeout_seconds=60):
            phase = event["object"].status.phase
            if phase == "Running":
                w.stop()
        self.assertEqual("Running", phase)
        got = self.core.read_namespaced_pod("one", self.ns)
        self.assertTrue(got.spec.node_name)
        self.core.delete_namespaced_pod("one", self.ns, grace_period_seconds=0)

    def test_missing_object_is_a_404(self):
        with self.assertRaises(ApiException) as cm:
            self.core.read_namespaced_pod("absent", self.ns)
        self.assertEqual(404, cm.exception.status)

    def test_patches(self):
        self.core.create_namespaced_config_map(self.ns, client.V1ConfigMap(
            metadata=client.V1ObjectMeta(name="cm"), data={"a": "1"}))
        self.core.patch_namespaced_config_map("cm", self.ns, {"data": {"b": "2"}})
        got = self.core.read_namespaced_config_map("cm", self.ns)
        self.assertEqual({"a": "1", "b": "2"}, got.data)
        self.core.patch_namespaced_config_map("cm", self.ns, [{"op": "remove", "path": "/data/a"}])
        self.assertEqual({"b": "2"}, self.core.read_namespaced_config_map("cm", self.ns).data)

    def test_lists_are_paged(self):
        for i in range(5):
            self.core.create_namespaced_config_map(self.ns, client.V1ConfigMap(
                metadata=client.V1ObjectMeta(name="cm-%d" % i, labels={"page": "yes"})))
        names, token = [], None
        while True:
            page = self.core.list_namespaced_config_map(self.ns, label_selector="page=yes", limit=2, _continue=token)
            names += [c.metadata.name for c in page.items]
            token = page.metadata._continue
            if not token:
                break
        self.assertEqual(["cm-%d" % i for i in range(5)], names)

    def test_dynamic_client_finds_and_serves_kinds(self):
        dyn = dynamic.DynamicClient(self.api)
        hpas = dyn.resources.get(api_version="autoscaling/v2", kind="HorizontalPodAutoscaler")
        hpas.create(namespace=self.ns, body={
            "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                     "minReplicas": 1, "maxReplicas": 3}})
        self.assertEqual(3, hpas.get(namespace=self.ns, name="web").spec.maxReplicas)
        ingresses = dyn.resources.get(api_version="networking.k8s.io/v1", kind="Ingress")
        ingresses.create(namespace=self.ns, body={
            "apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "web"},
            "spec": {"defaultBackend": {"service": {"name": "web", "port": {"number": 80}}}}})
        self.assertEqual(["web"], [i.metadata.name for i in ingresses.get(namespace=self.ns).items])
        pvcs = dyn.resources.get(api_version="v1", kind="PersistentVolumeClaim")
        self.assertEqual("pvc", pvcs.short_names[0])


if __name__ == "__main__":
    unittest.main()
