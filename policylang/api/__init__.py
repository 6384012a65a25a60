"""The Kubernetes API as the scheduler reads it: the objects (model/), quantities, label and node
selectors, a pod's effective requests, and the API's field error texts. The bottom layer: it imports
nothing of policylang's but the frozen helper, and everything else may import it."""
