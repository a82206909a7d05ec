from .api.cash import urlpatterns as cash_urlpatterns
from .api.coups import urlpatterns as coup_urlpatterns
from .api.succession import urlpatterns as succession_urlpatterns

urlpatterns = [*coup_urlpatterns, *succession_urlpatterns, *cash_urlpatterns]
