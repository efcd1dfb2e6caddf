;; A component that exports nothing: not a rebound:policy/retry-policy component.
(component)
