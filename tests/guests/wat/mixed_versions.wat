;; A component that mixes package versions: it imports the 0.2.0 `failure` interface but
;; exports the 0.1.0 strategy. A component is built for one version; the host refuses it.
(component
  (import "rebound:policy/failure@0.2.0" (instance))
  (instance $strategy)
  (export "rebound:policy/strategy@0.1.0" (instance $strategy))
)
