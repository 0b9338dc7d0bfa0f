package core

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubegate/kubegate/apiserver"
)

// ServiceAccounts, stored as written; their token subresource is
// apiserver/authapi's TokenRequest, given to the server as a Creator.

func serviceAccountResource() *apiserver.Resource {
	return &apiserver.Resource{GVR: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Kind: "ServiceAccount", Singular: "serviceaccount", Namespaced: true,
		ShortNames: []string{"sa"}, ReturnDeleted: true, ValidateName: apivalidation.NameIsDNSSubdomain, Table: serviceAccountTable}
}

var serviceAccountTable = &apiserver.TableDef{
	Columns: []metav1.TableColumnDefinition{apiserver.NameColumn, apiserver.AgeColumn},
	Cells: func(obj runtime.Object, now time.Time) []any {
		sa := obj.(*corev1.ServiceAccount)
		return []any{sa.Name, apiserver.Age(sa.CreationTimestamp, now)}
	},
}
