package validate

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// overlays are the kustomize overlays that must build.
var overlays = []string{"dev", "prod"}

// built is one overlay's objects, decoded strictly by kind.
type built struct {
	deployments  []*appsv1.Deployment
	services     []*corev1.Service
	configMaps   map[string]*corev1.ConfigMap
	pdbs         []*policyv1.PodDisruptionBudget
	hpas         []*autoscalingv2.HorizontalPodAutoscaler
	netpols      []*networkingv1.NetworkPolicy
	namespaceSet map[string]bool
}

// build runs kustomize on the overlay as `kubectl apply -k` would (files only
// from inside the kustomization root) and decodes every object into its
// k8s.io/api type, refusing unknown fields and unknown kinds.
func build(t *testing.T, overlay string) built {
	t.Helper()
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), "../k8s/overlays/"+overlay)
	require.NoError(t, err, "kustomize build %s", overlay)
	b := built{configMaps: map[string]*corev1.ConfigMap{}, namespaceSet: map[string]bool{}}
	for _, r := range res.Resources() {
		raw, err := r.AsYAML()
		require.NoError(t, err)
		var meta metav1.TypeMeta
		require.NoError(t, yaml.Unmarshal(raw, &meta))
		var obj interface{ GetNamespace() string }
		switch meta.APIVersion + "/" + meta.Kind {
		case "apps/v1/Deployment":
			d := &appsv1.Deployment{}
			b.deployments, obj = append(b.deployments, d), d
		case "v1/Service":
			s := &corev1.Service{}
			b.services, obj = append(b.services, s), s
		case "v1/ConfigMap":
			c := &corev1.ConfigMap{}
			obj = c
			defer func() { b.configMaps[c.Name] = c }()
		case "policy/v1/PodDisruptionBudget":
			p := &policyv1.PodDisruptionBudget{}
			b.pdbs, obj = append(b.pdbs, p), p
		case "autoscaling/v2/HorizontalPodAutoscaler":
			h := &autoscalingv2.HorizontalPodAutoscaler{}
			b.hpas, obj = append(b.hpas, h), h
		case "networking.k8s.io/v1/NetworkPolicy":
			n := &networkingv1.NetworkPolicy{}
			b.netpols, obj = append(b.netpols, n), n
		default:
			t.Fatalf("%s: unexpected object %s %s", overlay, meta.APIVersion, meta.Kind)
		}
		require.NoError(t, yaml.UnmarshalStrict(raw, obj), "%s: strict decoding of %s %s:\n%s", overlay, meta.Kind, r.GetName(), raw)
		b.namespaceSet[obj.GetNamespace()] = true
	}
	return b
}

// wantKind fails unless the overlay built objects of every kind the issue lists.
func (b built) wantKinds(t *testing.T) {
	t.Helper()
	assert.Len(t, b.deployments, 2, "gateway and worker")
	assert.NotEmpty(t, b.services)
	assert.NotEmpty(t, b.pdbs)
	assert.NotEmpty(t, b.hpas)
	assert.NotEmpty(t, b.netpols)
	assert.NotEmpty(t, b.configMaps)
	assert.Len(t, b.namespaceSet, 1, "one namespace per overlay")
	assert.False(t, b.namespaceSet[""], "the overlay sets a namespace")
}

func (b built) deployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	for _, d := range b.deployments {
		if d.Name == name {
			return d
		}
	}
	t.Fatalf("no Deployment %s", name)
	return nil
}

// env resolves a container's environment: its env values and the data of
// the ConfigMaps it takes with envFrom; the Secrets it takes are listed.
func (b built) env(t *testing.T, c corev1.Container) (map[string]string, []string) {
	t.Helper()
	vals := map[string]string{}
	var secrets []string
	for _, from := range c.EnvFrom {
		switch {
		case from.ConfigMapRef != nil:
			cm, ok := b.configMaps[from.ConfigMapRef.Name]
			require.True(t, ok, "container %s: ConfigMap %s exists", c.Name, from.ConfigMapRef.Name)
			for k, v := range cm.Data {
				vals[k] = v
			}
		case from.SecretRef != nil:
			secrets = append(secrets, from.SecretRef.Name)
		}
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			vals[e.Name] = e.Value
		}
	}
	return vals, secrets
}

func TestKustomizeOverlays(t *testing.T) {
	t.Parallel()
	for _, overlay := range overlays {
		t.Run(overlay, func(t *testing.T) {
			t.Parallel()
			b := build(t, overlay)
			b.wantKinds(t)
			for _, d := range b.deployments {
				checkDeployment(t, b, d)
			}
			gw := b.deployment(t, "oncegate-gateway")
			checkGatewayProbes(t, gw)
			checkSelectors(t, b)
		})
	}
}

// checkDeployment: non-root, locked-down containers with resource requests,
// ONCEGATE_ENV set and not dev, the secrets from a Secret and never written
// as values, the catalog mounted from its ConfigMap.
func checkDeployment(t *testing.T, b built, d *appsv1.Deployment) {
	t.Helper()
	spec := d.Spec.Template.Spec
	require.NotNil(t, spec.SecurityContext, d.Name)
	require.NotNil(t, spec.SecurityContext.RunAsNonRoot, d.Name)
	assert.True(t, *spec.SecurityContext.RunAsNonRoot, d.Name)
	require.NotEmpty(t, spec.Containers, d.Name)
	for _, c := range spec.Containers {
		where := d.Name + "/" + c.Name
		assert.False(t, c.Resources.Requests.Cpu().IsZero(), "%s requests CPU", where)
		assert.False(t, c.Resources.Requests.Memory().IsZero(), "%s requests memory", where)
		sc := c.SecurityContext
		require.NotNil(t, sc, where)
		require.NotNil(t, sc.AllowPrivilegeEscalation, where)
		assert.False(t, *sc.AllowPrivilegeEscalation, where)
		require.NotNil(t, sc.ReadOnlyRootFilesystem, where)
		assert.True(t, *sc.ReadOnlyRootFilesystem, where)
		require.NotNil(t, sc.Capabilities, where)
		assert.Contains(t, sc.Capabilities.Drop, corev1.Capability("ALL"), where)

		env, secrets := b.env(t, c)
		assert.NotEmpty(t, env["ONCEGATE_ENV"], "%s sets ONCEGATE_ENV", where)
		assert.NotEqual(t, "dev", env["ONCEGATE_ENV"], where)
		assert.Contains(t, secrets, "oncegate-secrets", "%s takes keys and URLs from the Secret", where)
		for _, k := range secretKeys {
			_, written := env[k]
			assert.False(t, written, "%s: %s comes from the Secret, not a value", where, k)
		}
		assert.NotEmpty(t, env["TEMPORAL_ADDRESS"], where)
		assert.Empty(t, env["ONCEGATE_TOKENS"], "%s: no token file in a deployment", where)
	}
	if d.Name == "oncegate-gateway" {
		c := spec.Containers[0]
		env, _ := b.env(t, c)
		mounted := false
		for _, m := range c.VolumeMounts {
			if strings.HasPrefix(env["ONCEGATE_CATALOG"], m.MountPath+"/") {
				mounted = true
				vol := volume(spec, m.Name)
				require.NotNil(t, vol, "volume %s", m.Name)
				require.NotNil(t, vol.ConfigMap, "the catalog comes from a ConfigMap")
				cm, ok := b.configMaps[vol.ConfigMap.Name]
				require.True(t, ok, "ConfigMap %s exists", vol.ConfigMap.Name)
				file := strings.TrimPrefix(env["ONCEGATE_CATALOG"], m.MountPath+"/")
				assert.Contains(t, cm.Data[file], "payments.transfer", "the catalog is in ConfigMap %s", cm.Name)
			}
		}
		assert.True(t, mounted, "ONCEGATE_CATALOG %q is on a mounted volume", env["ONCEGATE_CATALOG"])
	}
}

func volume(spec corev1.PodSpec, name string) *corev1.Volume {
	for i := range spec.Volumes {
		if spec.Volumes[i].Name == name {
			return &spec.Volumes[i]
		}
	}
	return nil
}

// checkGatewayProbes: liveness on /healthz and readiness on /readyz, on the
// port the container declares.
func checkGatewayProbes(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	c := d.Spec.Template.Spec.Containers[0]
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, pc := range []struct {
		probe *corev1.Probe
		path  string
	}{{c.LivenessProbe, "/healthz"}, {c.ReadinessProbe, "/readyz"}} {
		require.NotNil(t, pc.probe, pc.path)
		require.NotNil(t, pc.probe.HTTPGet, pc.path)
		assert.Equal(t, pc.path, pc.probe.HTTPGet.Path)
		_, named := ports[pc.probe.HTTPGet.Port.String()]
		assert.True(t, named, "probe %s on a declared port, got %s", pc.path, pc.probe.HTTPGet.Port.String())
	}
}

// checkSelectors: the Service, PDBs, HPAs and NetworkPolicies point at pods
// and Deployments that exist.
func checkSelectors(t *testing.T, b built) {
	t.Helper()
	podsOf := func(sel labels.Selector) []string {
		var names []string
		for _, d := range b.deployments {
			if sel.Matches(labels.Set(d.Spec.Template.Labels)) {
				names = append(names, d.Name)
			}
		}
		return names
	}
	for _, s := range b.services {
		assert.Equal(t, []string{"oncegate-gateway"}, podsOf(labels.SelectorFromSet(s.Spec.Selector)), "Service %s", s.Name)
	}
	for _, p := range b.pdbs {
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		require.NoError(t, err)
		assert.Len(t, podsOf(sel), 1, "PDB %s selects one Deployment", p.Name)
	}
	scaled := map[string]bool{}
	for _, h := range b.hpas {
		b.deployment(t, h.Spec.ScaleTargetRef.Name)
		scaled[h.Spec.ScaleTargetRef.Name] = true
		require.NotNil(t, h.Spec.MinReplicas)
		assert.GreaterOrEqual(t, *h.Spec.MinReplicas, int32(2), "HPA %s keeps two for availability", h.Name)
		assert.Greater(t, h.Spec.MaxReplicas, *h.Spec.MinReplicas, h.Name)
	}
	covered := map[string]bool{}
	for _, n := range b.netpols {
		sel, err := metav1.LabelSelectorAsSelector(&n.Spec.PodSelector)
		require.NoError(t, err)
		for _, d := range podsOf(sel) {
			covered[d] = true
		}
	}
	for _, d := range b.deployments {
		assert.True(t, scaled[d.Name], "an HPA scales %s", d.Name)
		assert.True(t, covered[d.Name], "a NetworkPolicy covers %s", d.Name)
	}
}

// TestCatalogCopy: the base's catalog is the dev catalog (kustomize reads
// files only from inside the kustomization, so the base keeps a copy).
func TestCatalogCopy(t *testing.T) {
	t.Parallel()
	want, err := os.ReadFile("../catalog.dev.yaml")
	require.NoError(t, err)
	got, err := os.ReadFile("../k8s/base/catalog.yaml")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "deployments/k8s/base/catalog.yaml differs from deployments/catalog.dev.yaml: copy it again")
}

// TestStrictDecodingRefusesUnknownFields: the decoder the overlays go through
// refuses a misspelt field, so a passing overlay means a clean one.
func TestStrictDecodingRefusesUnknownFields(t *testing.T) {
	t.Parallel()
	bad := []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: x}\nspec:\n  replicas: 1\n  replicaz: 2\n")
	err := yaml.UnmarshalStrict(bad, &appsv1.Deployment{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "replicaz")
}
