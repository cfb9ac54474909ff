// Command oracle runs Kubeflow Trainer's own runtime framework on TrainJob + runtime pairs, as
// its webhooks and controller do, and prints what upstream would create or reject.
//
// Built by hack/build.sh against the Trainer module pinned in hack/versions.env (the go.mod is
// generated there; nothing of upstream's is in this repository). For every case it:
//  1. applies the CRD schema defaults of the pinned module's manifests/base/crds (the
//     kube-apiserver's structural defaulting),
//  2. validates the runtime with the (Cluster)TrainingRuntime webhook's ValidateCreate, and
//     runtime and TrainJob with their CRD's CEL rules (x-kubernetes-validations: what the
//     kube-apiserver refuses before any webhook, e.g. two mlPolicies at once),
//  3. validates the TrainJob with the runtime's ValidateObjects (the TrainJob webhook),
//  4. builds the objects with the runtime's NewObjects (the TrainJob controller), against a fake
//     client holding the runtime, and lists the ConfigMaps that call created (the snapshot).
//
// stdin: a JSON list of {"name", "trainJob", "runtime"}; stdout: a JSON list of
// {"name", "runtimeErrors", "runtimeFieldErrors", "crdErrors", "errors", "warnings", "buildError",
// "objects", "created"}: runtimeFieldErrors are runtimeErrors with the field.ErrorList paths;
// trainJobError is the TrainJob webhook's refusal that names no field (a runtimeRef of no runtime).
// Usage: oracle --crds DIR < cases.json
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	celvalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	apiservercel "k8s.io/apiserver/pkg/apis/cel"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	trainer "github.com/kubeflow/trainer/v2/pkg/apis/trainer/v1alpha1"
	trainerruntime "github.com/kubeflow/trainer/v2/pkg/runtime"
	runtimecore "github.com/kubeflow/trainer/v2/pkg/runtime/core"
	testingutil "github.com/kubeflow/trainer/v2/pkg/util/testing"
	"github.com/kubeflow/trainer/v2/pkg/webhooks"
)

type inputCase struct {
	Name     string         `json:"name"`
	TrainJob map[string]any `json:"trainJob"`
	Runtime  map[string]any `json:"runtime"`
}

type fieldError struct {
	Field   string `json:"field"`
	Type    string `json:"type"`
	Detail  string `json:"detail"`
	Message string `json:"message"`
}

type result struct {
	Name          string           `json:"name"`
	RuntimeErrors []string         `json:"runtimeErrors"`
	RuntimeFields []fieldError     `json:"runtimeFieldErrors"`
	CRDErrors     []fieldError     `json:"crdErrors"`
	TrainJobError string           `json:"trainJobError,omitempty"`
	Errors        []fieldError     `json:"errors"`
	Warnings      []string         `json:"warnings"`
	BuildError    string           `json:"buildError,omitempty"`
	Objects       []map[string]any `json:"objects"`
	Created       []map[string]any `json:"created"`
}

func main() {
	crds := flag.String("crds", "", "folder holding Trainer's CRD manifests (manifests/base/crds)")
	flag.Parse()
	klog.SetOutput(os.Stderr)
	schemas, err := loadSchemas(*crds)
	if err != nil {
		fail(err)
	}
	var cases []inputCase
	if err := json.NewDecoder(os.Stdin).Decode(&cases); err != nil {
		fail(fmt.Errorf("reading cases from stdin: %w", err))
	}
	results := make([]result, 0, len(cases))
	for _, c := range cases {
		r, err := run(schemas, c)
		if err != nil {
			fail(fmt.Errorf("case %s: %w", c.Name, err))
		}
		results = append(results, r)
	}
	out := json.NewEncoder(os.Stdout)
	out.SetIndent("", " ")
	if err := out.Encode(results); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "oracle:", err)
	os.Exit(1)
}

// loadSchemas reads the structural schema of every CRD in dir, by kind.
func loadSchemas(dir string) (map[string]*structuralschema.Structural, error) {
	files, err := filepath.Glob(filepath.Join(dir, "trainer.kubeflow.org_*.yaml"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %q (--crds)", dir)
	}
	out := map[string]*structuralschema.Structural{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(raw, &crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		for _, v := range crd.Spec.Versions {
			if !v.Storage || v.Schema == nil {
				continue
			}
			var internal apiextensionsinternal.JSONSchemaProps
			if err := apiextensionsv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &internal, nil); err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			s, err := structuralschema.NewStructural(&internal)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", f, err)
			}
			out[crd.Spec.Names.Kind] = s
		}
	}
	return out, nil
}

// decode applies the CRD defaults of obj's kind, then decodes it into into; it returns what the
// CRD's CEL rules refuse (as the kube-apiserver runs them on create: no old object).
func decode(schemas map[string]*structuralschema.Structural, obj map[string]any, into any) ([]fieldError, error) {
	kind, _ := obj["kind"].(string)
	s, ok := schemas[kind]
	if !ok {
		return nil, fmt.Errorf("no CRD for kind %q", kind)
	}
	structuraldefaulting.Default(obj, s)
	var refused []fieldError
	if v := celvalidation.NewValidator(s, true, apiservercel.PerCallLimit); v != nil {
		errs, _ := v.Validate(context.Background(), nil, s, obj, nil, apiservercel.RuntimeCELCostBudget)
		refused = fieldErrors(errs)
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	return refused, json.Unmarshal(raw, into)
}

func fieldErrors(errs field.ErrorList) []fieldError {
	out := []fieldError{}
	for _, e := range errs {
		out = append(out, fieldError{Field: e.Field, Type: string(e.Type), Detail: e.Detail, Message: e.Error()})
	}
	return out
}

func run(schemas map[string]*structuralschema.Structural, c inputCase) (result, error) {
	ctx := context.Background()
	r := result{Name: c.Name, RuntimeErrors: []string{}, RuntimeFields: []fieldError{}, CRDErrors: []fieldError{},
		Errors: []fieldError{}, Warnings: []string{}, Objects: []map[string]any{}, Created: []map[string]any{}}
	var job trainer.TrainJob
	refused, err := decode(schemas, c.TrainJob, &job)
	if err != nil {
		return r, fmt.Errorf("trainJob: %w", err)
	}
	r.CRDErrors = append(r.CRDErrors, refused...)
	builder := testingutil.NewClientBuilder()
	var runtimeErr error
	switch kind, _ := c.Runtime["kind"].(string); kind {
	case trainer.TrainingRuntimeKind:
		var rt trainer.TrainingRuntime
		refused, err := decode(schemas, c.Runtime, &rt)
		if err != nil {
			return r, fmt.Errorf("runtime: %w", err)
		}
		r.CRDErrors = append(r.CRDErrors, refused...)
		_, runtimeErr = (&webhooks.TrainingRuntimeValidator{}).ValidateCreate(ctx, &rt)
		builder = builder.WithObjects(&rt)
	case trainer.ClusterTrainingRuntimeKind:
		var rt trainer.ClusterTrainingRuntime
		refused, err := decode(schemas, c.Runtime, &rt)
		if err != nil {
			return r, fmt.Errorf("runtime: %w", err)
		}
		r.CRDErrors = append(r.CRDErrors, refused...)
		var warnings []string
		warnings, runtimeErr = (&webhooks.ClusterTrainingRuntimeValidator{}).ValidateCreate(ctx, &rt)
		r.Warnings = append(r.Warnings, warnings...)
		builder = builder.WithObjects(&rt)
	default:
		return r, fmt.Errorf("runtime kind %q", kind)
	}
	r.RuntimeErrors = append(r.RuntimeErrors, messages(runtimeErr)...)
	r.RuntimeFields = append(r.RuntimeFields, runtimeFields(runtimeErr)...)
	cl := builder.Build()
	runtimes, err := runtimecore.New(ctx, cl, testingutil.AsIndex(builder), nil)
	if err != nil {
		return r, err
	}
	key := trainerruntime.RuntimeRefToRuntimeRegistryKey(job.Spec.RuntimeRef)
	rt, ok := runtimes[key]
	if !ok { // the TrainJob webhook's ValidateCreate (pkg/webhooks/trainjob_webhook.go): no field
		r.TrainJobError = fmt.Sprintf("unsupported runtime: %s", key)
		return r, nil
	}
	warnings, errs := rt.ValidateObjects(ctx, nil, &job)
	r.Warnings = append(r.Warnings, warnings...)
	r.Errors = append(r.Errors, fieldErrors(errs)...)
	if len(errs) != 0 || len(r.RuntimeErrors) != 0 {
		return r, nil
	}
	objs, err := rt.NewObjects(ctx, &job)
	if err != nil {
		r.BuildError = err.Error()
		return r, nil
	}
	for _, o := range objs {
		m, err := toMap(o)
		if err != nil {
			return r, err
		}
		r.Objects = append(r.Objects, m)
	}
	var cms corev1.ConfigMapList
	if err := cl.List(ctx, &cms, client.InNamespace(job.Namespace)); err != nil {
		return r, err
	}
	for i := range cms.Items {
		m, err := toMap(&cms.Items[i])
		if err != nil {
			return r, err
		}
		r.Created = append(r.Created, m)
	}
	return r, nil
}

func toMap(o any) (map[string]any, error) {
	raw, err := json.Marshal(o)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	return m, json.Unmarshal(raw, &m)
}

// messages lists the messages of an error, one per aggregated error.
func messages(err error) []string {
	if err == nil {
		return nil
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		out := []string{}
		for _, e := range agg.Errors() {
			out = append(out, e.Error())
		}
		return out
	}
	return []string{err.Error()}
}

// runtimeFields: the field errors of a runtime webhook's aggregate (its validateReplicatedJobs
// field.ErrorList, through ToAggregate).
func runtimeFields(err error) []fieldError {
	var agg utilerrors.Aggregate
	if err == nil || !errors.As(err, &agg) {
		return nil
	}
	var errs field.ErrorList
	for _, e := range agg.Errors() {
		var fe *field.Error
		if errors.As(e, &fe) {
			errs = append(errs, fe)
		}
	}
	return fieldErrors(errs)
}
