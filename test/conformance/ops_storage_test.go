package conformance

// storageOps are the storage.k8s.io operations and those of
// PersistentVolumes and their claims, with the DefaultStorageClass and
// StorageObjectInUseProtection admission plugins, in a namespace of their
// own. No volume controller runs next to either server, so a volume's and
// a claim's status is what the operations write. The default class they
// create is gone again by their end.
func storageOps() []op {
	const (
		g        = "/apis/storage.k8s.io/v1"
		scs      = g + "/storageclasses"
		vacs     = g + "/volumeattributesclasses"
		drivers  = g + "/csidrivers"
		nodes    = g + "/csinodes"
		vas      = g + "/volumeattachments"
		sns      = "storage-ops"
		caps     = g + "/namespaces/" + sns + "/csistoragecapacities"
		pvs      = "/api/v1/persistentvolumes"
		pvcs     = "/api/v1/namespaces/" + sns + "/persistentvolumeclaims"
		defClass = `{"storageclass.kubernetes.io/is-default-class":"true"}`
	)
	obj := func(kind, name, rest string) string {
		return `{"apiVersion":"storage.k8s.io/v1","kind":"` + kind + `","metadata":{"name":"` + name + `"}` + rest + `}`
	}
	class := func(name, annotations, rest string) string {
		meta := `"name":"` + name + `"`
		if annotations != "" {
			meta += `,"annotations":` + annotations
		}
		return `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{` + meta + `},"provisioner":"example.com/disk"` + rest + `}`
	}
	pv := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	pvc := func(name, spec string) string {
		return `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"` + name + `"},"spec":{` + spec + `}}`
	}
	const claimSpec = `"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}`
	const hostPath = `"capacity":{"storage":"5Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/data/a"}`
	return []op{
		{name: "storage/namespace", method: "POST", path: "/api/v1/namespaces", body: `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"` + sns + `"}}`},
		{name: "storage/discovery", method: "GET", path: g},
		{name: "storage/discovery-group", method: "GET", path: "/apis/storage.k8s.io"},
		{name: "storage/discovery-aggregated", method: "GET", path: "/apis", accept: discoveryV2, project: aggregatedGroup("storage.k8s.io")},
		{name: "storage/openapi-v3", method: "GET", path: "/openapi/v3/apis/storage.k8s.io/v1",
			project: openAPISchemas("components", "io.k8s.api.storage.v1.StorageClass", "io.k8s.api.storage.v1.VolumeAttachment",
				"io.k8s.api.storage.v1.CSIDriver", "io.k8s.api.storage.v1.CSINode", "io.k8s.api.storage.v1.CSIStorageCapacity",
				"io.k8s.api.storage.v1.VolumeAttributesClass")},

		// StorageClasses.
		{name: "storage/sc-create", method: "POST", path: scs, body: class("fast", "", `,"parameters":{"type":"ssd"},"allowVolumeExpansion":true`)},
		{name: "storage/sc-create-invalid", method: "POST", path: scs,
			body: `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"Bad_Name"},"provisioner":"not a/valid/name","reclaimPolicy":"Recycle","volumeBindingMode":"Later",` +
				`"allowedTopologies":[{"matchLabelExpressions":[{"key":"zone","values":[]}]}]}`},
		{name: "storage/sc-create-no-provisioner", method: "POST", path: scs, body: obj("StorageClass", "none", `,"parameters":{"":"x"}`)},
		{name: "storage/sc-get", method: "GET", path: scs + "/fast"},
		{name: "storage/sc-patch-immutable", method: "PATCH", path: scs + "/fast", contentType: mergePatch,
			body: `{"provisioner":"example.com/other","parameters":{"type":"hdd"},"reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"}`},
		{name: "storage/sc-patch-expansion", method: "PATCH", path: scs + "/fast", contentType: mergePatch, body: `{"allowVolumeExpansion":false,"mountOptions":["ro"]}`},
		{name: "storage/sc-create-default", method: "POST", path: scs, body: class("standard", defClass, `,"reclaimPolicy":"Retain","volumeBindingMode":"WaitForFirstConsumer"`)},
		{name: "storage/sc-table", method: "GET", path: scs + "/standard", accept: tableAccept},
		{name: "storage/sc-table-list", method: "GET", path: scs, accept: tableAccept},
		{name: "storage/kubectl-get-sc", kubectl: []string{"get", "sc"}},
		{name: "storage/kubectl-describe-sc", kubectl: []string{"describe", "sc", "standard"}},

		// VolumeAttributesClasses.
		{name: "storage/vac-create", method: "POST", path: vacs, body: obj("VolumeAttributesClass", "gold", `,"driverName":"example.com/disk","parameters":{"iops":"3000"}`)},
		{name: "storage/vac-create-invalid", method: "POST", path: vacs, body: obj("VolumeAttributesClass", "bad", `,"driverName":""`)},
		{name: "storage/vac-patch-immutable", method: "PATCH", path: vacs + "/gold", contentType: mergePatch, body: `{"driverName":"example.com/other","parameters":{"iops":"1"}}`},
		{name: "storage/vac-table-list", method: "GET", path: vacs, accept: tableAccept},
		{name: "storage/vac-delete", method: "DELETE", path: vacs + "/gold"},
		{name: "storage/vac-unprotect", method: "PATCH", path: vacs + "/gold", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/vac-get-gone", method: "GET", path: vacs + "/gold"},

		// CSIDrivers, CSINodes and CSIStorageCapacities.
		{name: "storage/csidriver-create", method: "POST", path: drivers, body: obj("CSIDriver", "disk.example.com", `,"spec":{"tokenRequests":[{"audience":"vault"}]}`)},
		{name: "storage/csidriver-create-invalid", method: "POST", path: drivers, body: obj("CSIDriver", "bad.example.com",
			`,"spec":{"fsGroupPolicy":"Sometimes","volumeLifecycleModes":["Forever"],"tokenRequests":[{"audience":"a","expirationSeconds":60},{"audience":"a"}],"nodeAllocatableUpdatePeriodSeconds":5}`)},
		{name: "storage/csidriver-get", method: "GET", path: drivers + "/disk.example.com"},
		{name: "storage/csidriver-patch-immutable", method: "PATCH", path: drivers + "/disk.example.com", contentType: mergePatch,
			body: `{"spec":{"attachRequired":false,"volumeLifecycleModes":["Ephemeral"]}}`},
		{name: "storage/csidriver-patch-spec", method: "PATCH", path: drivers + "/disk.example.com", contentType: mergePatch, body: `{"spec":{"podInfoOnMount":true}}`},
		{name: "storage/csidriver-table", method: "GET", path: drivers, accept: tableAccept},
		{name: "storage/csinode-create", method: "POST", path: nodes, body: obj("CSINode", "node-a",
			`,"spec":{"drivers":[{"name":"disk.example.com","nodeID":"a","topologyKeys":["topology.example.com/zone"],"allocatable":{"count":8}}]}`)},
		{name: "storage/csinode-create-invalid", method: "POST", path: nodes, body: obj("CSINode", "node-b",
			`,"spec":{"drivers":[{"name":"","nodeID":""},{"name":"x.example.com","nodeID":"b","topologyKeys":["k","k","bad key"],"allocatable":{"count":-1}}]}`)},
		{name: "storage/csinode-patch-driver", method: "PATCH", path: nodes + "/node-a", contentType: mergePatch,
			body: `{"spec":{"drivers":[{"name":"disk.example.com","nodeID":"changed","allocatable":{"count":4}}]}}`},
		{name: "storage/csinode-patch-count", method: "PATCH", path: nodes + "/node-a", contentType: jsonPatch,
			body: `[{"op":"replace","path":"/spec/drivers/0/allocatable/count","value":4}]`},
		{name: "storage/csinode-table", method: "GET", path: nodes + "/node-a", accept: tableAccept},
		{name: "storage/csinode-delete", method: "DELETE", path: nodes + "/node-a"},
		{name: "storage/capacity-create", method: "POST", path: caps,
			body: `{"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity","metadata":{"name":"zone-a"},"storageClassName":"fast","capacity":"100Gi","maximumVolumeSize":"10Gi",` +
				`"nodeTopology":{"matchLabels":{"topology.example.com/zone":"a"}}}`},
		{name: "storage/capacity-create-invalid", method: "POST", path: caps,
			body: `{"apiVersion":"storage.k8s.io/v1","kind":"CSIStorageCapacity","metadata":{"name":"bad"},"storageClassName":"Not_A_Class","capacity":"-1Gi",` +
				`"nodeTopology":{"matchExpressions":[{"key":"zone","operator":"Within"}]}}`},
		{name: "storage/capacity-patch-immutable", method: "PATCH", path: caps + "/zone-a", contentType: mergePatch,
			body: `{"storageClassName":"slow","nodeTopology":{"matchLabels":{"topology.example.com/zone":"b"}}}`},
		{name: "storage/capacity-patch-capacity", method: "PATCH", path: caps + "/zone-a", contentType: mergePatch, body: `{"capacity":"50Gi"}`},
		{name: "storage/capacity-table-list", method: "GET", path: caps, accept: tableAccept},
		{name: "storage/capacity-list-all", method: "GET", path: g + "/csistoragecapacities"},

		// VolumeAttachments and their status.
		{name: "storage/va-create", method: "POST", path: vas, body: obj("VolumeAttachment", "attach-1",
			`,"spec":{"attacher":"disk.example.com","nodeName":"node-a","source":{"persistentVolumeName":"vol-1"}},"status":{"attached":true}`)},
		{name: "storage/va-create-invalid", method: "POST", path: vas, body: obj("VolumeAttachment", "attach-2", `,"spec":{"attacher":"Not Valid","nodeName":"Node_A","source":{}}`)},
		{name: "storage/va-create-both-sources", method: "POST", path: vas, body: obj("VolumeAttachment", "attach-3",
			`,"spec":{"attacher":"disk.example.com","nodeName":"node-a","source":{"persistentVolumeName":"","inlineVolumeSpec":{}}}`)},
		{name: "storage/va-patch-spec", method: "PATCH", path: vas + "/attach-1", contentType: mergePatch, body: `{"spec":{"nodeName":"node-b"}}`},
		{name: "storage/va-patch-status", method: "PATCH", path: vas + "/attach-1/status", contentType: mergePatch,
			body: `{"spec":{"nodeName":"node-b"},"status":{"attached":true,"attachmentMetadata":{"dev":"/dev/xvda"}}}`},
		{name: "storage/va-patch-status-invalid", method: "PATCH", path: vas + "/attach-1/status", contentType: mergePatch,
			body: `{"status":{"attachError":{"message":"failed","errorCode":-1}}}`},
		{name: "storage/va-get", method: "GET", path: vas + "/attach-1"},
		{name: "storage/va-table", method: "GET", path: vas, accept: tableAccept},
		{name: "storage/va-field-selector", method: "GET", path: vas + "?fieldSelector=metadata.name%3Dattach-1"},
		{name: "storage/va-delete", method: "DELETE", path: vas + "/attach-1"},

		// PersistentVolumes.
		{name: "storage/pv-create", method: "POST", path: pvs, body: pv("vol-a", hostPath+`,"storageClassName":"standard"`)},
		{name: "storage/pv-create-csi", method: "POST", path: pvs, body: pv("vol-csi",
			`"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOncePod"],"persistentVolumeReclaimPolicy":"Delete","volumeMode":"Block",`+
				`"csi":{"driver":"disk.example.com","volumeHandle":"h-1","nodePublishSecretRef":{"name":"s"}}`)},
		{name: "storage/pv-create-invalid", method: "POST", path: pvs, body: pv("vol-bad",
			`"capacity":{"storage":"0","cpu":"1"},"accessModes":["ReadWriteOncePod","ReadWriteMany","Sometimes"],"persistentVolumeReclaimPolicy":"Shred",`+
				`"hostPath":{"path":"/a/../b","type":"Pipe"},"nfs":{"server":"","path":"rel"},"storageClassName":"Bad_Class","volumeMode":"Tape"}`)},
		{name: "storage/pv-create-empty", method: "POST", path: pvs, body: pv("vol-empty", "")},
		{name: "storage/pv-create-local", method: "POST", path: pvs, body: pv("vol-local",
			`"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"local":{"path":""},"nodeAffinity":{"required":{"nodeSelectorTerms":[]}}`)},
		{name: "storage/pv-create-local-no-affinity", method: "POST", path: pvs, body: pv("vol-local",
			`"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"local":{"path":"/mnt/disk"}`)},
		{name: "storage/pv-create-recycle", method: "POST", path: pvs, body: pv("vol-recycle",
			`"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteMany"],"persistentVolumeReclaimPolicy":"Recycle","nfs":{"server":"nfs.example.com","path":"/exports"}`)},
		{name: "storage/pv-get", method: "GET", path: pvs + "/vol-a"},
		{name: "storage/pv-patch-mode", method: "PATCH", path: pvs + "/vol-a", contentType: mergePatch, body: `{"spec":{"volumeMode":"Block"}}`},
		{name: "storage/pv-patch-claim-ref", method: "PATCH", path: pvs + "/vol-a", contentType: mergePatch,
			body: `{"spec":{"claimRef":{"namespace":"` + sns + `","name":"data"},"capacity":{"storage":"6Gi"}}}`},
		{name: "storage/pv-patch-status", method: "PATCH", path: pvs + "/vol-a/status", contentType: mergePatch,
			body: `{"spec":{"capacity":{"storage":"9Gi"}},"status":{"phase":"Bound","message":"bound by hand"}}`},
		{name: "storage/pv-table", method: "GET", path: pvs, accept: tableAccept},
		{name: "storage/pv-field-selector", method: "GET", path: pvs + "?fieldSelector=metadata.name%3Dvol-csi"},
		{name: "storage/kubectl-get-pv", kubectl: []string{"get", "pv", "-o", "wide"}},

		// PersistentVolumeClaims, the default class and the finalizers.
		{name: "storage/pvc-create", method: "POST", path: pvcs, body: pvc("data", claimSpec)},
		{name: "storage/pvc-create-fast", method: "POST", path: pvcs, body: pvc("quick", claimSpec+`,"storageClassName":"fast","volumeMode":"Block"`)},
		{name: "storage/pvc-create-no-class", method: "POST", path: pvcs, body: pvc("classless", claimSpec+`,"storageClassName":""`)},
		{name: "storage/pvc-create-invalid", method: "POST", path: pvcs, body: pvc("bad",
			`"accessModes":[],"resources":{"requests":{"cpu":"1"}},"selector":{"matchLabels":{"a b":"c"}},"storageClassName":"Bad_Class","volumeMode":"Tape",`+
				`"dataSource":{"kind":"Snapshot","name":""}`)},
		{name: "storage/pvc-create-zero", method: "POST", path: pvcs, body: pvc("zero",
			`"accessModes":["ReadWriteOncePod","ReadOnlyMany"],"resources":{"requests":{"storage":"0"}},"dataSourceRef":{"apiGroup":"Bad_Group","kind":"Snapshot","name":"s"}`)},
		{name: "storage/pvc-create-snapshot-source", method: "POST", path: pvcs, body: pvc("restored",
			claimSpec+`,"storageClassName":"","dataSource":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"snap"}`)},
		{name: "storage/pvc-create-unknown-source", method: "POST", path: pvcs, body: pvc("widget",
			claimSpec+`,"storageClassName":"","dataSource":{"kind":"Widget","name":"w"},"dataSourceRef":null}`)},
		{name: "storage/pvc-create-cross-namespace-source", method: "POST", path: pvcs, body: pvc("elsewhere",
			claimSpec+`,"storageClassName":"","dataSourceRef":{"apiGroup":"snapshot.storage.k8s.io","kind":"VolumeSnapshot","name":"snap","namespace":"other"}`)},
		{name: "storage/pvc-get", method: "GET", path: pvcs + "/data"},
		{name: "storage/pvc-bind", method: "PATCH", path: pvcs + "/data", contentType: mergePatch, body: `{"spec":{"volumeName":"vol-a"}}`},
		{name: "storage/pvc-status-bound", method: "PATCH", path: pvcs + "/data/status", contentType: mergePatch,
			body: `{"status":{"phase":"Bound","capacity":{"storage":"5Gi"},"accessModes":["ReadWriteOnce"]}}`},
		{name: "storage/pvc-status-invalid", method: "PATCH", path: pvcs + "/quick/status", contentType: mergePatch,
			body: `{"status":{"allocatedResourceStatuses":{"storage":"Stuck"},"allocatedResources":{"cpu":"1"}}}`},
		{name: "storage/pvc-grow-not-expandable", method: "PATCH", path: pvcs + "/data", contentType: mergePatch, body: `{"spec":{"resources":{"requests":{"storage":"8Gi"}}}}`},
		{name: "storage/pvc-shrink-below-capacity", method: "PATCH", path: pvcs + "/data", contentType: mergePatch, body: `{"spec":{"resources":{"requests":{"storage":"512Mi"}}}}`},
		{name: "storage/pvc-table-list", method: "GET", path: pvcs, accept: tableAccept},
		{name: "storage/pvc-field-selector", method: "GET", path: pvcs + "?fieldSelector=metadata.name%3Dquick"},
		{name: "storage/kubectl-get-pvc", kubectl: []string{"get", "pvc", "-n", sns, "-o", "wide"}},
		{name: "storage/kubectl-describe-pvc", kubectl: []string{"describe", "pvc", "data", "-n", sns}},
		{name: "storage/sc-create-newer-default", method: "POST", path: scs, body: class("a-newer", defClass, "")},
		{name: "storage/pvc-create-newest-default", method: "POST", path: pvcs, body: pvc("newest", claimSpec)},
		{name: "storage/kubectl-get-sc-two-defaults", kubectl: []string{"get", "sc"}},

		// Deletion waits for the protection finalizers, which no controller
		// removes here.
		{name: "storage/pvc-delete-protected", method: "DELETE", path: pvcs + "/quick"},
		{name: "storage/pvc-table-terminating", method: "GET", path: pvcs + "/quick", accept: tableAccept},
		{name: "storage/pvc-unprotect", method: "PATCH", path: pvcs + "/quick", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-get-gone", method: "GET", path: pvcs + "/quick"},
		{name: "storage/pv-delete-protected", method: "DELETE", path: pvs + "/vol-csi"},
		{name: "storage/pv-unprotect", method: "PATCH", path: pvs + "/vol-csi", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},

		// The rest goes, the default classes first.
		{name: "storage/sc-delete-newer-default", method: "DELETE", path: scs + "/a-newer"},
		{name: "storage/sc-delete-default", method: "DELETE", path: scs + "/standard"},
		{name: "storage/sc-delete", method: "DELETE", path: scs + "/fast"},
		{name: "storage/pvc-unprotect-all", method: "PATCH", path: pvcs + "/data", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-unprotect-classless", method: "PATCH", path: pvcs + "/classless", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-unprotect-newest", method: "PATCH", path: pvcs + "/newest", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-unprotect-restored", method: "PATCH", path: pvcs + "/restored", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-unprotect-widget", method: "PATCH", path: pvcs + "/widget", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-unprotect-elsewhere", method: "PATCH", path: pvcs + "/elsewhere", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pvc-delete-all", method: "DELETE", path: pvcs},
		{name: "storage/pvc-list-after-delete", method: "GET", path: pvcs},
		{name: "storage/pv-unprotect-a", method: "PATCH", path: pvs + "/vol-a", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pv-unprotect-recycle", method: "PATCH", path: pvs + "/vol-recycle", contentType: mergePatch, body: `{"metadata":{"finalizers":null}}`},
		{name: "storage/pv-delete", method: "DELETE", path: pvs + "/vol-a"},
		{name: "storage/pv-delete-recycle", method: "DELETE", path: pvs + "/vol-recycle"},
		{name: "storage/csidriver-delete", method: "DELETE", path: drivers + "/disk.example.com"},
		{name: "storage/capacity-delete", method: "DELETE", path: caps + "/zone-a"},
		{name: "storage/sc-list-empty", method: "GET", path: scs},
	}
}
